/** Top-level Messages fields that have no Chat Completions counterpart and cannot be dropped. */
import type { Json } from '../../json';
import { GatewayError } from '../../kernel/errors';
import { invalid, isAbsent } from './fields';

/**
 * Top-level fields whose work Anthropic's API does itself, with nothing on the chat side to do it:
 * dropping them would silently answer a different question.
 */
const UNMAPPABLE_FIELDS: Readonly<Record<string, string>> = {
  container: 'code-execution containers exist only on Anthropic models',
  mcp_servers: "remote MCP servers are called by Anthropic's API, which this model does not go through",
};

/** Refuses a request that sets any of those fields, with a 400 naming the first one. */
export function refuseUnmappableFields(body: Json): void {
  refuseThread(body.thread);
  for (const [field, reason] of Object.entries(UNMAPPABLE_FIELDS)) {
    const value = body[field];
    if (isAbsent(value) || (Array.isArray(value) && value.length === 0)) continue;
    throw invalid(field, `${reason}; remove ${field} or choose an Anthropic model.`);
  }
}

/**
 * A message thread (beta `message-threads-2026-08-12`) lives on Anthropic's servers: a `continue`
 * carries only the new messages, so translating it would send the model half a conversation. The
 * refusal uses the shape the Anthropic SDK recognises (`error.details.error_code`), so its tool
 * runner resends the whole history unthreaded by itself.
 */
function refuseThread(thread: unknown): void {
  if (isAbsent(thread)) return;
  throw new GatewayError(
    'TOLLGATE_ERR_REQUEST_INVALID',
    "thread: message threads are kept by Anthropic's API, which this model does not go through; send the whole conversation without thread.",
    { param: 'thread', details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] } },
  );
}
