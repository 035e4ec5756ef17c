/**
 * The validated, frozen shape of gateway.yaml. `schemas/gateway.schema.json` is the source of truth
 * for what an operator may write; these types mirror it after ajv has applied the defaults.
 */

/**
 * The wire protocol a provider speaks. `bedrock` and `vertex` carry Anthropic Messages bodies on AWS
 * and Google Cloud; `echo` is the built-in demo provider, which speaks all of them. Each has its
 * descriptor in `src/wire`.
 */
export type ProviderProtocol = 'openai' | 'anthropic' | 'bedrock' | 'vertex' | 'echo';

/** Provider settings that belong to some protocols only (cross-checked against the descriptor). */
export type ProtocolSetting = 'api_key' | 'auth_header' | 'region' | 'access_key_id' | 'secret_access_key' | 'session_token' | 'project_id' | 'credentials_file';

/** The protocol family a model natively belongs to (DECISIONS.md 1: declared, never guessed). */
export type ModelFamily = 'openai' | 'anthropic';

export interface ProviderTimeouts {
  /** TCP + TLS connect. */
  readonly connect_ms: number;
  /** From the request being sent to the response headers arriving. */
  readonly first_byte_ms: number;
  /** Longest silence allowed between two body chunks. */
  readonly idle_ms: number;
}

export interface ProviderConfig {
  readonly id: string;
  readonly protocol: ProviderProtocol;
  /** Origin plus path prefix; for `openai` it includes the version path (`https://api.openai.com/v1`). */
  readonly base_url: string;
  /** Empty when the operator left the key unset: the provider's models then answer 503. */
  readonly api_key: string;
  /** openai: `authorization` (Bearer) or `api-key` (Azure OpenAI). */
  readonly auth_header: 'authorization' | 'api-key';
  /** bedrock: AWS region; vertex: Google Cloud region. '' for the others. */
  readonly region: string;
  /** bedrock: static credentials; all empty means the default AWS credential chain. */
  readonly access_key_id: string;
  readonly secret_access_key: string;
  readonly session_token: string;
  /** vertex: the Google Cloud project. */
  readonly project_id: string;
  /** vertex: a service-account key file; '' means application default credentials. */
  readonly credentials_file: string;
  /** Sent on every upstream request, after the client's allowed headers. */
  readonly headers: Readonly<Record<string, string>>;
  /** `anthropic-version` sent on translated requests to an Anthropic upstream (DECISIONS.md 14). */
  readonly anthropic_version: string;
  readonly timeouts: ProviderTimeouts;
  /** Upper bound of pooled connections to this provider. */
  readonly max_connections: number;
}

export interface RouteTarget {
  readonly provider: string;
  /** The id sent upstream; the public model id when absent. */
  readonly upstream_model: string;
  readonly priority: number;
  readonly weight: number;
}

/** Prices per 1 million tokens, in currency units of the balance, as written in gateway.yaml. */
export interface ModelPrice {
  readonly input: number;
  readonly cache_write: number;
  readonly cache_write_1h: number;
  readonly cache_hit: number;
  readonly output: number;
  /** Per 1,000 calls of a server-side tool billed per call, by tool name. */
  readonly tool_calls: Readonly<Record<string, number>>;
}

/** `adaptive`: `thinking: {type: "adaptive"}` + `output_config.effort`; `budget`: `budget_tokens`; `none`: no reasoning. */
export type ThinkingStyle = 'adaptive' | 'budget' | 'none';

export interface ModelConfig {
  readonly id: string;
  readonly family: ModelFamily;
  readonly routes: readonly RouteTarget[];
  /** Absent only when `free` is true (a cross-field rule of the loader). */
  readonly price?: ModelPrice;
  readonly free: boolean;
  /** The most output one answer can have: held when a request sets no limit, and caps one it sets. */
  readonly max_output_tokens: number;
  /** The most input one request can have; present on every priced model (a cross-field rule). */
  readonly context_window?: number;
  /** How reasoning effort is expressed to this model when a request is translated. */
  readonly thinking: ThinkingStyle;
  /** Other names clients may send for this model; `*` matches any run of characters. Always set by the loader. */
  readonly aliases?: readonly string[];
  /** Fields of the upstream plugin's failover policy this model overrides. */
  readonly failover?: Partial<FailoverPolicy>;
  readonly description?: string;
}

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly max_body_bytes: number;
  readonly max_json_depth: number;
  readonly headers_timeout_ms: number;
  readonly request_timeout_ms: number;
  readonly keep_alive_timeout_ms: number;
  /** Trust X-Forwarded-Proto/-For from the proxies in front (Koa's `app.proxy`). */
  readonly trust_proxy: boolean;
  /** How many X-Forwarded-For entries, from the right, proxies wrote (Koa's `app.maxIpsCount`). */
  readonly trusted_proxy_hops: number;
  readonly shutdown_grace_ms: number;
  readonly shutdown_unready_ms: number;
  /** Processes serving requests: a count, or "auto" for one per CPU core (`workerCount` resolves it). */
  readonly workers: number | 'auto';
}

export interface ConsoleConfig {
  readonly enabled: boolean;
  readonly signup: boolean;
  readonly session_ttl_hours: number;
  readonly login_failures_per_window: number;
}

/** OpenTelemetry traces (src/telemetry); each field may also come from the standard OTEL_* variables. */
export interface TracesConfig {
  /** OTLP/HTTP traces URL; '' leaves it to the environment (and off when that has none either). */
  readonly endpoint: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Absent: OTEL_TRACES_SAMPLER_ARG, else 1. */
  readonly sample_ratio?: number;
}

export interface TelemetryConfig {
  readonly traces: TracesConfig;
}

export interface StoreConfig {
  /** `sqlite:<path>` (embedded, the default) or `postgres://…`. */
  readonly url: string;
  /** PostgreSQL: wait for a pooled connection at most this long. */
  readonly connect_timeout_ms: number;
  /** PostgreSQL: cancel a query that runs longer. */
  readonly statement_timeout_ms: number;
  /** PostgreSQL: connections per instance. */
  readonly pool_size: number;
}

export interface RedisConfig {
  /** Empty: no Redis; shared state stays in the store and in process. */
  readonly url: string;
  readonly key_prefix: string;
  readonly command_timeout_ms: number;
}

export interface AuthPluginConfig {
  readonly enabled: boolean;
  /** How long a validated key stays in the in-memory cache; revocations bypass it. */
  readonly cache_ttl_ms: number;
  readonly cache_max_entries: number;
  /** Wrong keys allowed per client address per minute (0: no limit). */
  readonly failures_per_minute: number;
}

/** An outcome of an attempt worth retrying: a transport failure or an upstream status. */
export type RetryableOutcome = 'connect_error' | 'reset' | 'timeout' | number;

export interface FailoverPolicy {
  readonly max_attempts: number;
  readonly retry_on: readonly RetryableOutcome[];
  readonly backoff_base_ms: number;
  readonly backoff_max_ms: number;
  readonly deadline_ms: number;
}

export interface BreakerConfig {
  readonly enabled: boolean;
  readonly error_threshold_percent: number;
  readonly volume_threshold: number;
  readonly reset_timeout_ms: number;
  readonly rolling_window_ms: number;
}

export interface RetryBudgetConfig {
  readonly percent: number;
  readonly min_retries: number;
}

/** Session affinity within a priority level (src/routing/affinity.ts). */
export interface AffinityConfig {
  readonly enabled: boolean;
  /** `header`: the session is the value of `header`; `api_key`: every request of a key is one session. */
  readonly key: 'header' | 'api_key';
  readonly header: string;
  readonly max_entries: number;
  readonly ttl_ms: number;
}

export interface UpstreamPluginConfig {
  readonly enabled: boolean;
  readonly affinity: AffinityConfig;
  readonly failover: FailoverPolicy;
  readonly retry_budget: RetryBudgetConfig;
  readonly breaker: BreakerConfig;
}

export interface BillingPluginConfig {
  readonly enabled: boolean;
  readonly hold_ttl_ms: number;
  readonly sweep_interval_ms: number;
  readonly flush_interval_ms: number;
  readonly flush_max_records: number;
  /** Paid requests admitted and not yet written to the ledger, past which new ones get 503. */
  readonly max_queued_charges: number;
  /** Age of the oldest charge waiting for the ledger past which new paid requests get 503. */
  readonly max_queued_age_ms: number;
  /** How often the live balances are compared with the ledger (0: never). */
  readonly drift_check_interval_ms: number;
  /** `charge`: the full reported cost, excess recorded as overage; `cap`: at most the hold, excess recorded as unbilled. */
  readonly overage: 'charge' | 'cap';
  /** Calls held per per-call-priced server tool when the request does not cap them. */
  readonly server_tool_uses: number;
  readonly cost_header: boolean;
}

export interface MetricsPluginConfig {
  readonly enabled: boolean;
  /** When non-empty, GET /metrics requires `Authorization: Bearer <token>`. */
  readonly bearer_token: string;
  /** Also count per account id (unbounded label values, so off by default). */
  readonly label_accounts: boolean;
}

export interface TranslatePluginConfig {
  readonly enabled: boolean;
}

/** Limits per minute window; 0 means unlimited. */
export interface RateLimits {
  /** Requests per window. */
  readonly rpm: number;
  /** Tokens per window: reserved at admission (input estimate + output limit), corrected from usage. */
  readonly tpm: number;
  /** Requests in flight at once, streams included until they end. */
  readonly concurrency: number;
}

export interface RateLimitPluginConfig {
  readonly enabled: boolean;
  /** Limits of every key unless `keys` overrides them. */
  readonly per_key: RateLimits;
  /** Limits of every account (all its keys together) unless `accounts` overrides them. */
  readonly per_account: RateLimits;
  /** Per key id: the fields given replace those of `per_key`. */
  readonly keys: Readonly<Record<string, Partial<RateLimits>>>;
  /** Per account id: the fields given replace those of `per_account`. */
  readonly accounts: Readonly<Record<string, Partial<RateLimits>>>;
  /** With Redis: how long a concurrency slot outlives an instance that died holding it. */
  readonly concurrency_lease_ms: number;
  /** With Redis down, each instance enforces its limits divided by this (the number of instances). */
  readonly fallback_instances: number;
}

/** Every plugin's section, by plugin name. Adding a plugin adds a line here and a schema file. */
export interface PluginConfigs {
  readonly auth: AuthPluginConfig;
  readonly billing: BillingPluginConfig;
  readonly metrics: MetricsPluginConfig;
  readonly 'rate-limit': RateLimitPluginConfig;
  readonly translate: TranslatePluginConfig;
  readonly upstream: UpstreamPluginConfig;
}

export type PluginName = keyof PluginConfigs;

export interface GatewayConfig {
  /** The file this config was read from, for messages. */
  readonly source: string;
  readonly version: number;
  readonly server: ServerConfig;
  readonly console: ConsoleConfig;
  readonly store: StoreConfig;
  readonly redis: RedisConfig;
  readonly telemetry: TelemetryConfig;
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly models: Readonly<Record<string, ModelConfig>>;
  readonly plugins: PluginConfigs;
}
