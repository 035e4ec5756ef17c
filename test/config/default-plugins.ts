/** Every plugin's section of gateway.yaml once the schema defaults are applied: what an empty `plugins:` means. */
export const DEFAULT_PLUGIN_CONFIG = {
  auth: { enabled: true, cache_ttl_ms: 60000, cache_max_entries: 10000, failures_per_minute: 20 },
  billing: { enabled: true, hold_ttl_ms: 3600000, sweep_interval_ms: 30000, flush_interval_ms: 10, flush_max_records: 500, max_queued_charges: 1000, max_queued_age_ms: 2000, outbox_path: 'data/outbox', outbox_max_bytes: 134217728, drift_check_interval_ms: 60000, overage: 'charge', server_tool_uses: 10, currency: '', cost_header: true, statements: { name: 'Tollgate', address: [], tax_id: '', footer: '', number_prefix: 'TG' } },
  metrics: { enabled: true, bearer_token: '', label_accounts: false },
  'rate-limit': {
    enabled: true,
    per_key: { rpm: 0, tpm: 0, concurrency: 0 },
    per_account: { rpm: 0, tpm: 0, concurrency: 0 },
    keys: {},
    accounts: {},
    concurrency_lease_ms: 600000,
    fallback_instances: 1,
  },
  translate: { enabled: true, web_search_max_uses: 5 },
  upstream: {
    enabled: true,
    failover: {
      max_attempts: 3,
      retry_on: ['connect_error', 'reset', 'timeout', 429, 500, 502, 503, 504, 529],
      backoff_base_ms: 50,
      backoff_max_ms: 2000,
      deadline_ms: 120000,
    },
    affinity: { enabled: true, key: 'header', header: 'x-claude-code-session-id', max_entries: 100000, ttl_ms: 3600000 },
    retry_budget: { percent: 20, min_retries: 3 },
    breaker: { enabled: true, error_threshold_percent: 50, volume_threshold: 10, reset_timeout_ms: 30000, rolling_window_ms: 10000 },
  },
};
