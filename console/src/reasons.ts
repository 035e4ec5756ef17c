// Refused requests in plain words: the refusal codes the gateway records, and what refused them.

const REASONS: Readonly<Record<string, string>> = {
  TOLLGATE_ERR_AUTH_INVALID_KEY: 'Invalid or missing API key',
  TOLLGATE_ERR_AUTH_TOO_MANY_FAILURES: 'Too many invalid keys from one address',
  TOLLGATE_ERR_AUTH_IP_NOT_ALLOWED: 'Address not allowed for this key',
  TOLLGATE_ERR_AUTH_UNAVAILABLE: 'Key store unavailable',
  TOLLGATE_ERR_MODEL_NOT_ALLOWED: 'Model not allowed for this key',
  TOLLGATE_ERR_MODEL_NOT_FOUND: 'Unknown model',
  TOLLGATE_ERR_PROVIDER_UNCONFIGURED: 'Provider not configured',
  TOLLGATE_ERR_UNSUPPORTED_PROTOCOL: 'Model not served on this endpoint',
  TOLLGATE_ERR_INSUFFICIENT_BALANCE: 'Balance too low',
  TOLLGATE_ERR_KEY_SPEND_LIMIT: 'Key spend limit reached',
  TOLLGATE_ERR_BUDGET_EXCEEDED: 'Budget reached',
  TOLLGATE_ERR_SESSION_BUDGET_EXCEEDED: 'Session budget reached',
  TOLLGATE_ERR_RATE_LIMIT_REQUESTS: 'Rate limit (requests per minute)',
  TOLLGATE_ERR_RATE_LIMIT_TOKENS: 'Rate limit (tokens per minute)',
  TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY: 'Too many requests at once',
  TOLLGATE_ERR_BILLING_UNAVAILABLE: 'Billing unavailable',
  TOLLGATE_ERR_SERVICE_NOT_OFFERED: 'Service tier not offered',
  TOLLGATE_ERR_BODY_INVALID_JSON: 'Body is not valid JSON',
  TOLLGATE_ERR_REQUEST_INVALID: 'Invalid request',
  TOLLGATE_ERR_BODY_TOO_LARGE: 'Request too large',
  TOLLGATE_ERR_SHUTTING_DOWN: 'Gateway restarting',
};

const PERIODS: Readonly<Record<string, string>> = { day: 'daily', week: 'weekly', month: 'monthly' };

/** A refusal code in words; an unknown one as itself, without its prefix. */
export function reasonText(code: string): string {
  return REASONS[code] ?? code.replace(/^TOLLGATE_ERR_/, '').toLowerCase().replace(/_/g, ' ');
}

/** What refused it: `budget:key:month` → "the key's monthly budget". */
export function refusedByText(level: string | null): string | null {
  if (level === null) return null;
  const [kind, scope, period] = level.split(':');
  const owner = (scope ?? kind) === 'key' ? "the key's" : "the account's";
  if (kind === 'budget') return `${owner} ${PERIODS[period ?? ''] ?? ''} budget`.replace(/ {2}/g, ' ');
  if (kind === 'key') return 'the key';
  if (kind === 'member') return "the member's limit";
  if (kind === 'account') return 'the account';
  return level;
}

