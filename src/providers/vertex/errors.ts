/**
 * Vertex errors in the Anthropic vocabulary. The model's own errors already are Anthropic's
 * (`{"type":"error","error":{…}}`); the platform's (quota, permissions, unknown model) come in Google's
 * shape (`{"error":{"code","message","status"}}`, sometimes inside an array) and are rewritten so native
 * clients, the translators and the failover policy read them alike.
 */
import { object, tryParse } from '../../json';
import { anthropicErrorOfStatus, type AnthropicErrorKind } from '../../protocols/anthropic-messages/error-status';
import type { ErrorReply } from '../../wire/types';

/** Google's canonical statuses, as Anthropic statuses and types. */
const BY_GOOGLE_STATUS: Readonly<Record<string, AnthropicErrorKind>> = {
  INVALID_ARGUMENT: { status: 400, type: 'invalid_request_error' },
  FAILED_PRECONDITION: { status: 400, type: 'invalid_request_error' },
  NOT_FOUND: { status: 404, type: 'not_found_error' },
  RESOURCE_EXHAUSTED: { status: 429, type: 'rate_limit_error' },
  INTERNAL: { status: 500, type: 'api_error' },
  UNAVAILABLE: { status: 529, type: 'overloaded_error' },
  DEADLINE_EXCEEDED: { status: 504, type: 'timeout_error' },
};

export function vertexErrorReply(status: number, body: Buffer): ErrorReply {
  const parsed = tryParse(body.toString('utf8'));
  const first: unknown = Array.isArray(parsed) ? parsed[0] : parsed;
  if (object(first).type === 'error') return { status, body };
  const error = object(object(first).error);
  const mapped = (typeof error.status === 'string' ? BY_GOOGLE_STATUS[error.status] : undefined) ?? anthropicErrorOfStatus(status);
  const message = typeof error.message === 'string' && error.message !== '' ? error.message : `Google Vertex AI answered ${status}.`;
  return { status: mapped.status, body: Buffer.from(JSON.stringify({ type: 'error', error: { type: mapped.type, message } })) };
}
