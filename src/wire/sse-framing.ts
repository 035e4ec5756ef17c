/** What the SSE-speaking protocols share: their stream framing, passthrough bodies and error events. */
import type { ProviderConfig } from '../config/types';
import { replaceModel } from '../kernel/json-scan';
import { SseParser, type SseEvent } from '../protocols/sse';
import type { ErrorReply, NativeBodyInput, StreamFraming } from './types';

export const SSE_FRAMING: StreamFraming = {
  isStream: (headers) => String(headers['content-type'] ?? '').startsWith('text/event-stream'),
  newParser: (maxEventBytes, rawLineBytes) => new SseParser(maxEventBytes, rawLineBytes),
  passthrough: true,
};

/** The client's bytes, with the model renamed when the route names another upstream id. */
export function renamedBody({ request, upstreamModel }: NativeBodyInput): Buffer {
  // Compared with the name the client sent, which an alias makes differ from the model's id.
  return upstreamModel === request.body.model ? request.raw : replaceModel(request.raw, request.modelSpan, upstreamModel);
}

export function jsonBody(body: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify(body));
}

export const unchangedError = (status: number, body: Buffer): ErrorReply => ({ status, body });
export const unchangedReply = (_endpoint: unknown, body: Buffer): Buffer => body;

/** A provider called with a key from gateway.yaml. */
export const hasApiKey = (provider: ProviderConfig): boolean => provider.api_key !== '';

/** Anthropic Messages streams report errors as `event: error`. */
export function isMessagesErrorEvent(event: SseEvent): boolean {
  return event.event === 'error';
}

/** OpenAI streams: Responses names `error` and `response.failed`; chat frames carry an `error` object. */
export function isOpenAIErrorEvent(event: SseEvent): boolean {
  if (event.event === 'error' || event.event === 'response.failed') return true;
  return event.event === null && /^\s*\{\s*"error"\s*:/.test(event.data);
}
