/**
 * One table of every error Tollgate itself produces. Each protocol renders a `GatewayError` in its own shape
 * (docs/protocols.md#error-shapes, see `protocols/errors.ts`); the table fixes the status and the wire
 * `type`/`code` so the same failure reads the same on every endpoint.
 */

export interface ErrorSpec {
  readonly status: number;
  /** OpenAI `error.type`. */
  readonly type: string;
  /** OpenAI `error.code`; null where OpenAI itself sends none. */
  readonly code: string | null;
  /** Anthropic `error.type`; derived from the status when absent. */
  readonly anthropicType?: string;
  /** Whether clients should retry (sets `x-should-retry`); the SDKs' status rule applies when absent. */
  readonly retry?: boolean;
}

const ERRORS = {
  TOLLGATE_ERR_BODY_INVALID_JSON: { status: 400, type: 'invalid_request_error', code: 'invalid_json' },
  TOLLGATE_ERR_BODY_NOT_OBJECT: { status: 400, type: 'invalid_request_error', code: 'invalid_request_body' },
  TOLLGATE_ERR_BODY_TOO_DEEP: { status: 400, type: 'invalid_request_error', code: 'json_too_deep' },
  TOLLGATE_ERR_BODY_FORBIDDEN_KEY: { status: 400, type: 'invalid_request_error', code: 'forbidden_key' },
  /** A key twice in one object (docs/decisions.md#d18-a-body-is-read-one-way-or-refused): which copy wins is the parser's choice, so the body's meaning is not one. */
  TOLLGATE_ERR_BODY_DUPLICATE_KEY: { status: 400, type: 'invalid_request_error', code: 'duplicate_key', retry: false },
  TOLLGATE_ERR_BODY_TOO_LARGE: { status: 413, type: 'invalid_request_error', code: 'request_too_large', anthropicType: 'request_too_large' },
  TOLLGATE_ERR_BODY_CONTENT_TYPE: { status: 415, type: 'invalid_request_error', code: 'unsupported_media_type' },
  TOLLGATE_ERR_BODY_CONTENT_ENCODING: { status: 415, type: 'invalid_request_error', code: 'unsupported_content_encoding' },
  TOLLGATE_ERR_BODY_INVALID_ENCODING: { status: 400, type: 'invalid_request_error', code: 'invalid_content_encoding' },
  TOLLGATE_ERR_REQUEST_INVALID: { status: 400, type: 'invalid_request_error', code: 'invalid_value' },
  /** A `previous_response_id` or item reference a translated model cannot resolve: OpenAI's own code, so clients resend the history. */
  TOLLGATE_ERR_PREVIOUS_RESPONSE_NOT_FOUND: { status: 400, type: 'invalid_request_error', code: 'previous_response_not_found' },
  /** A priced service (a tier, a priced anthropic-beta) the model has no rates for (`billing/asked-service.ts`). */
  TOLLGATE_ERR_SERVICE_NOT_OFFERED: { status: 400, type: 'invalid_request_error', code: 'service_not_offered', retry: false },
  TOLLGATE_ERR_MODEL_NOT_FOUND: { status: 404, type: 'invalid_request_error', code: 'model_not_found' },
  TOLLGATE_ERR_UNSUPPORTED_PROTOCOL: { status: 400, type: 'invalid_request_error', code: 'unsupported_model_for_endpoint' },
  TOLLGATE_ERR_AUTH_INVALID_KEY: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key', retry: false },
  TOLLGATE_ERR_METRICS_UNAUTHORIZED: { status: 401, type: 'invalid_request_error', code: 'invalid_metrics_token', retry: false },
  TOLLGATE_ERR_INSUFFICIENT_BALANCE: { status: 402, type: 'insufficient_quota', code: 'insufficient_balance', anthropicType: 'billing_error', retry: false },
  TOLLGATE_ERR_KEY_SPEND_LIMIT: { status: 402, type: 'insufficient_quota', code: 'key_spend_limit_reached', anthropicType: 'billing_error', retry: false },
  TOLLGATE_ERR_BUDGET_EXCEEDED: { status: 402, type: 'insufficient_quota', code: 'budget_exceeded', anthropicType: 'billing_error', retry: false },
  /** One agent session spent what its key's or account's `session_budget` allows: the agent should stop, not retry. */
  TOLLGATE_ERR_SESSION_BUDGET_EXCEEDED: { status: 402, type: 'insufficient_quota', code: 'session_budget_exceeded', anthropicType: 'billing_error', retry: false },
  TOLLGATE_ERR_AUTH_IP_NOT_ALLOWED: { status: 403, type: 'permission_error', code: 'ip_not_allowed', anthropicType: 'permission_error', retry: false },
  TOLLGATE_ERR_MODEL_NOT_ALLOWED: { status: 403, type: 'permission_error', code: 'model_not_allowed', anthropicType: 'permission_error', retry: false },
  // OpenAI types its own 429s by the limit hit, `requests` or `tokens` (docs/protocols.md#chat-errors).
  TOLLGATE_ERR_RATE_LIMIT_REQUESTS: { status: 429, type: 'requests', code: 'rate_limit_exceeded', anthropicType: 'rate_limit_error' },
  TOLLGATE_ERR_RATE_LIMIT_TOKENS: { status: 429, type: 'tokens', code: 'rate_limit_exceeded', anthropicType: 'rate_limit_error' },
  TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY: { status: 429, type: 'requests', code: 'concurrency_limit_exceeded', anthropicType: 'rate_limit_error' },
  TOLLGATE_ERR_BILLING_UNAVAILABLE: { status: 503, type: 'service_unavailable_error', code: 'billing_unavailable', anthropicType: 'api_error' },
  TOLLGATE_ERR_AUTH_UNAVAILABLE: { status: 503, type: 'service_unavailable_error', code: 'auth_unavailable', anthropicType: 'api_error' },
  TOLLGATE_ERR_AUTH_TOO_MANY_FAILURES: { status: 429, type: 'rate_limit_error', code: 'too_many_invalid_keys', anthropicType: 'rate_limit_error', retry: false },
  TOLLGATE_ERR_PATH_UNKNOWN: { status: 404, type: 'invalid_request_error', code: 'unknown_url' },
  TOLLGATE_ERR_PATH_WRONG_BASE: { status: 404, type: 'invalid_request_error', code: 'unknown_url' },
  TOLLGATE_ERR_METHOD_NOT_ALLOWED: { status: 405, type: 'invalid_request_error', code: 'method_not_allowed' },
  /** A WebSocket upgrade of /v1/responses where the operator turned WebSocket mode off: clients fall back to HTTP at once. */
  TOLLGATE_ERR_WEBSOCKET_DISABLED: { status: 426, type: 'invalid_request_error', code: 'websocket_not_supported', retry: false },
  /** A WebSocket frame that is no client event Tollgate knows (not JSON, binary, or of an unknown type). */
  TOLLGATE_ERR_WEBSOCKET_EVENT_INVALID: { status: 400, type: 'invalid_request_error', code: 'invalid_event', retry: false },
  /** A `response.create` while the socket's previous response is still under way: one at a time per socket. */
  TOLLGATE_ERR_WEBSOCKET_RESPONSE_IN_FLIGHT: { status: 400, type: 'invalid_request_error', code: 'response_in_progress', retry: false },
  TOLLGATE_ERR_PROVIDER_UNCONFIGURED: { status: 503, type: 'service_unavailable_error', code: 'provider_not_configured', anthropicType: 'api_error', retry: false },
  TOLLGATE_ERR_UPSTREAM_AUTH: { status: 502, type: 'server_error', code: 'upstream_auth_failed', anthropicType: 'api_error', retry: false },
  TOLLGATE_ERR_UPSTREAM_UNREACHABLE: { status: 502, type: 'server_error', code: 'upstream_unreachable', anthropicType: 'api_error' },
  TOLLGATE_ERR_UPSTREAM_OVERLOADED: { status: 503, type: 'service_unavailable_error', code: 'upstream_overloaded', anthropicType: 'overloaded_error' },
  TOLLGATE_ERR_NO_HEALTHY_UPSTREAM: { status: 503, type: 'service_unavailable_error', code: 'no_healthy_upstream', anthropicType: 'overloaded_error' },
  TOLLGATE_ERR_UPSTREAM_TIMEOUT: { status: 504, type: 'server_error', code: 'upstream_timeout', anthropicType: 'timeout_error' },
  TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE: { status: 502, type: 'server_error', code: 'upstream_invalid_response', anthropicType: 'api_error' },
  /** An upstream error relayed through a translator; the translator supplies the status and types. */
  TOLLGATE_ERR_UPSTREAM_ERROR: { status: 502, type: 'server_error', code: null, anthropicType: 'api_error' },
  TOLLGATE_ERR_UNSUPPORTED_TRANSLATION: { status: 400, type: 'invalid_request_error', code: 'unsupported_model_for_endpoint' },
  TOLLGATE_ERR_STREAM_INTERRUPTED: { status: 502, type: 'server_error', code: 'stream_interrupted', anthropicType: 'api_error' },
  TOLLGATE_ERR_SHUTTING_DOWN: { status: 503, type: 'service_unavailable_error', code: 'shutting_down', anthropicType: 'overloaded_error' },
  TOLLGATE_ERR_INTERNAL: { status: 500, type: 'server_error', code: 'internal_error', anthropicType: 'api_error' },
  /** A stage found a request-state slot empty that an earlier stage fills (`kernel/need.ts`): the gateway's own fault. */
  TOLLGATE_ERR_INTERNAL_STATE: { status: 500, type: 'server_error', code: 'internal_error', anthropicType: 'api_error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Anthropic error types by status (docs/protocols.md#messages-errors). */
const ANTHROPIC_TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  409: 'conflict_error',
  413: 'request_too_large',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The Anthropic `error.type` for a status Tollgate produces. */
export function anthropicTypeFor(status: number): string {
  return ANTHROPIC_TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * An error with a code from the table. `message` is always safe to show a client: internal details
 * go in `cause`, which is logged and never rendered.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly spec: ErrorSpec;
  /** The request field the error is about (OpenAI `error.param`). */
  readonly param: string | null;
  /** Extra response headers, e.g. `retry-after`. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Machine-readable detail for the Anthropic envelope's `error.details`, which the Anthropic SDK
   * reads to recover by itself (e.g. `thread_unsupported_request` makes it resend unthreaded).
   */
  readonly details: Readonly<Record<string, unknown>> | null;
  /** Which of several checks refused the request (`budget:key:month`, `key`, `account`…), for its record; null when only one could. */
  readonly refusedBy: string | null;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      param?: string | null;
      cause?: unknown;
      headers?: Record<string, string>;
      /** Replaces the table's entry: only for upstream errors a translator re-shapes, whose status and types vary. */
      spec?: ErrorSpec;
      details?: Record<string, unknown>;
      refusedBy?: string;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.spec = options.spec ?? ERRORS[code];
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
    this.details = options.details ?? null;
    this.refusedBy = options.refusedBy ?? null;
  }

  get status(): number {
    return this.spec.status;
  }
}

/** Wraps anything thrown into a GatewayError, hiding what was not meant for the client. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('TOLLGATE_ERR_INTERNAL', 'The gateway failed to handle this request.', { cause: err });
}
