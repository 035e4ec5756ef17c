/**
 * An error event that opens an upstream stream, as a failure before anything was committed: the
 * status it stands for (so the failover policy can judge it) and the error the client would see.
 */
import { object, tryParse } from '../json';
import type { SseEvent } from '../protocols/sse';
import { upstreamStreamError } from '../translators/errors';
import { AttemptFailure } from './attempt';

/** Anthropic error types by the status they are sent with (docs/protocols.md#messages-errors). */
const STATUS_OF_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

export function failureFromErrorEvent(event: SseEvent): AttemptFailure {
  const payload = object(tryParse(event.data));
  // Messages: {type:"error", error:{type,message}}; chat: {error:{message,type,code}}; Responses: response.error.
  const error = object(payload.error ?? object(payload.response).error);
  const type = typeof error.type === 'string' ? error.type : '';
  const numericCode = typeof error.code === 'number' ? error.code : Number.NaN;
  const status = STATUS_OF_TYPE[type] ?? (numericCode >= 400 && numericCode < 600 ? numericCode : 502);
  return new AttemptFailure('status', status, upstreamStreamError(error));
}
