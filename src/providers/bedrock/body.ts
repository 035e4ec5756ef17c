/**
 * Bedrock request bodies: the Anthropic body with the model moved into the URL and the platform's version
 * field added (routing, docs/decisions.md#d2-native-requests-pass-through). Betas travel in the body as
 * `anthropic_beta`, since Bedrock reads no `anthropic-beta` header. CountTokens wraps the InvokeModel body,
 * base64-encoded.
 * https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { EndpointId } from '../../protocols/types';

const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** The InvokeModel body for an Anthropic body (client's or translated). */
function invokeModelBody(body: Readonly<Record<string, unknown>>, clientHeaders: IncomingHttpHeaders): Record<string, unknown> {
  const { model: _model, stream: _stream, ...rest } = body;
  const invoke: Record<string, unknown> = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  const betas = clientHeaders['anthropic-beta'];
  if (betas !== undefined && invoke.anthropic_beta === undefined) {
    const list = (Array.isArray(betas) ? betas.join(',') : betas).split(',').map((beta) => beta.trim()).filter((beta) => beta !== '');
    if (list.length > 0) invoke.anthropic_beta = list;
  }
  return invoke;
}

/** The request body for `endpoint`: InvokeModel's, or CountTokens' wrapping of it. */
export function bedrockBody(endpoint: EndpointId, body: Readonly<Record<string, unknown>>, clientHeaders: IncomingHttpHeaders): Buffer {
  const invoke = invokeModelBody(body, clientHeaders);
  if (endpoint !== 'count_tokens') return Buffer.from(JSON.stringify(invoke));
  // A count_tokens request has no max_tokens, which InvokeModel bodies require; it changes no count.
  if (invoke.max_tokens === undefined) invoke.max_tokens = 1;
  const encoded = Buffer.from(JSON.stringify(invoke)).toString('base64');
  return Buffer.from(JSON.stringify({ input: { invokeModel: { body: encoded } } }));
}

/** CountTokens answers `{"inputTokens": n}`; Messages clients read `{"input_tokens": n}`. */
export function countTokensReply(body: Buffer): Buffer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  const count = (parsed as { inputTokens?: unknown } | null)?.inputTokens;
  return typeof count === 'number' ? Buffer.from(JSON.stringify({ input_tokens: count })) : body;
}
