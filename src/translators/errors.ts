/**
 * Upstream errors in the client's vocabulary (docs/protocols.md#error-translation, both ways). The upstream's
 * message is kept word for word, since clients act on it; status, type and code are translated so
 * the client's SDK raises the class it would have raised talking to its own vendor.
 */
import { object, tryParse, type Json } from '../json';
import { GatewayError, type ErrorSpec } from '../kernel/errors';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** What a client learns about an upstream failure: its spec in both vocabularies and the message. */
interface UpstreamFailure {
  readonly spec: ErrorSpec;
  readonly message: string;
}

/** An Anthropic error type, as seen by OpenAI clients (and by Anthropic clients, with the type kept). */
const BY_ANTHROPIC_TYPE: Readonly<Record<string, ErrorSpec>> = {
  invalid_request_error: { status: 400, type: 'invalid_request_error', code: null, anthropicType: 'invalid_request_error' },
  not_found_error: { status: 404, type: 'invalid_request_error', code: 'model_not_found', anthropicType: 'not_found_error' },
  conflict_error: { status: 409, type: 'invalid_request_error', code: null, anthropicType: 'conflict_error' },
  request_too_large: { status: 413, type: 'invalid_request_error', code: 'request_too_large', anthropicType: 'request_too_large' },
  rate_limit_error: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', anthropicType: 'rate_limit_error' },
  api_error: { status: 500, type: 'server_error', code: null, anthropicType: 'api_error' },
  timeout_error: { status: 504, type: 'server_error', code: 'timeout', anthropicType: 'timeout_error' },
  // Many OpenAI clients do not know 529; every SDK retries 503 (docs/protocols.md#error-translation).
  overloaded_error: { status: 503, type: 'service_unavailable_error', code: 'server_is_overloaded', anthropicType: 'overloaded_error' },
  // The provider account's own billing: nothing the client can fix, so it reads as a gateway fault.
  billing_error: { status: 502, type: 'server_error', code: 'upstream_unavailable', anthropicType: 'api_error', retry: false },
};

/** An OpenAI upstream's status, as seen by Anthropic clients. */
const BY_OPENAI_STATUS: Readonly<Record<number, ErrorSpec>> = {
  400: { status: 400, type: 'invalid_request_error', code: null, anthropicType: 'invalid_request_error' },
  404: { status: 404, type: 'invalid_request_error', code: 'model_not_found', anthropicType: 'not_found_error' },
  409: { status: 409, type: 'invalid_request_error', code: null, anthropicType: 'conflict_error' },
  413: { status: 413, type: 'invalid_request_error', code: 'request_too_large', anthropicType: 'request_too_large' },
  422: { status: 400, type: 'invalid_request_error', code: null, anthropicType: 'invalid_request_error' },
  429: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', anthropicType: 'rate_limit_error' },
  500: { status: 500, type: 'server_error', code: null, anthropicType: 'api_error' },
  502: { status: 502, type: 'server_error', code: null, anthropicType: 'api_error' },
  // Claude Code and the Anthropic SDK know overload as 529.
  503: { status: 529, type: 'service_unavailable_error', code: 'server_is_overloaded', anthropicType: 'overloaded_error' },
  504: { status: 504, type: 'server_error', code: 'timeout', anthropicType: 'timeout_error' },
};

function fallbackSpec(status: number): ErrorSpec {
  return status >= 500
    ? { status, type: 'server_error', code: null, anthropicType: 'api_error' }
    : { status, type: 'invalid_request_error', code: null, anthropicType: 'invalid_request_error' };
}

/** The headers of an upstream error worth relaying: when to retry, and whether to. */
function retryHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ['retry-after', 'retry-after-ms', 'x-should-retry']) {
    const value = headers[name];
    if (typeof value === 'string') kept[name] = value;
  }
  return kept;
}

function gatewayError(failure: UpstreamFailure, headers: Record<string, string> = {}): GatewayError {
  return new GatewayError('TOLLGATE_ERR_UPSTREAM_ERROR', failure.message, { spec: failure.spec, headers });
}

const CONTEXT_TOO_LONG = /prompt is too long|context (length|window)/i;

function fromAnthropic(error: Json, status: number | null): UpstreamFailure {
  const type = typeof error.type === 'string' ? error.type : '';
  const message = typeof error.message === 'string' ? error.message : 'The upstream provider reported an error.';
  if (type === 'billing_error') {
    // The provider's account, not the client's balance: its wording would mislead the client.
    return { spec: BY_ANTHROPIC_TYPE.billing_error, message: "The upstream provider refused the request because of its own account's billing; the operator has been told." };
  }
  let spec = BY_ANTHROPIC_TYPE[type] ?? fallbackSpec(status ?? 500);
  if (type === 'invalid_request_error' && CONTEXT_TOO_LONG.test(message)) spec = { ...spec, code: 'context_length_exceeded' };
  return { spec, message };
}

/** OpenAI's wording of a context overflow, with the two numbers Claude Code needs. */
const OPENAI_CONTEXT = /maximum context length is (\d+) tokens[\s\S]*?(\d+) tokens/i;

function fromOpenAI(error: Json, status: number): UpstreamFailure {
  let message = typeof error.message === 'string' ? error.message : 'The upstream provider reported an error.';
  const code = typeof error.code === 'string' ? error.code : null;
  if (status === 429 && code === 'insufficient_quota') {
    return { spec: BY_ANTHROPIC_TYPE.billing_error, message: "The upstream provider refused the request because of its own account's quota; the operator has been told." };
  }
  const spec = BY_OPENAI_STATUS[status] ?? fallbackSpec(status);
  if (code === 'context_length_exceeded') {
    // Claude Code compacts its context when it reads Anthropic's wording (docs/protocols.md#messages-errors).
    const numbers = OPENAI_CONTEXT.exec(message);
    if (numbers !== null) message = `prompt is too long: ${numbers[2]} tokens > ${numbers[1]} maximum`;
    return { spec: { ...spec, code }, message };
  }
  return { spec, message };
}

/** An Anthropic upstream's error reply, for an OpenAI-shaped client. */
export function errorFromAnthropicReply(status: number, body: Buffer, headers: Headers): GatewayError {
  const error = object(object(tryParse(body.toString('utf8'))).error);
  const failure = fromAnthropic(error, status);
  return gatewayError(failure, retryHeaders(headers));
}

/** An OpenAI upstream's error reply, for an Anthropic-shaped client. */
export function errorFromOpenAIReply(status: number, body: Buffer, headers: Headers): GatewayError {
  const error = object(object(tryParse(body.toString('utf8'))).error);
  return gatewayError(fromOpenAI(error, status), retryHeaders(headers));
}

/** An error event inside an upstream stream (Anthropic `error.type`, or an OpenAI `error` chunk). */
export function upstreamStreamError(error: Json): GatewayError {
  if (typeof error.type === 'string' && error.type in BY_ANTHROPIC_TYPE) return gatewayError(fromAnthropic(error, null));
  const message = typeof error.message === 'string' ? error.message : 'The upstream provider reported an error mid-stream.';
  return new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', message);
}
