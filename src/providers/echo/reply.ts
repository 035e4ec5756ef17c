/**
 * The echo provider's answer, in the protocol it was asked in. The turn is computed once; the
 * protocol writers render it, whole or as a stream of one token per text delta.
 */
import { buildMessage, MessagesStreamWriter } from '../../protocols/anthropic-messages/writer';
import { buildChatCompletion, ChatStreamWriter } from '../../protocols/openai-chat/writer';
import { buildResponse, responsesRequestEcho, ResponsesStreamWriter } from '../../protocols/openai-responses/writer';
import type { AssistantTurn, TurnStreamWriter } from '../../protocols/turn';
import type { EndpointId, Usage } from '../../protocols/types';
import type { EchoRequest } from './read-request';
import { countEchoTokens, cutToTokens, tokenPieces } from './tokenizer';

/** How much of the user's text is echoed back, in echo tokens. */
const ECHO_MAX_TOKENS = 50;

/** What the demo says: `Echo: ` and the start of the last user message. */
function echoReplyText(lastUserText: string): string {
  return `Echo: ${cutToTokens(lastUserText, ECHO_MAX_TOKENS)}`;
}

/** Input tokens of a request: every prompt text counted, and never less than 1 (no prompt is free). */
function echoInputTokens(request: EchoRequest): number {
  return Math.max(1, request.promptTexts.reduce((sum, text) => sum + countEchoTokens(text), 0));
}

/** The echo's assistant turn, cut at the request's token limit when it has one. */
function echoTurn(request: EchoRequest): AssistantTurn {
  const full = echoReplyText(request.lastUserText);
  const limit = request.maxTokens;
  const cut = limit !== null && countEchoTokens(full) > limit;
  const text = cut ? cutToTokens(full, limit) : full;
  const usage: Usage = {
    inputTokens: echoInputTokens(request),
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: 0,
    outputTokens: countEchoTokens(text),
    imageInputTokens: 0,
    imageOutputTokens: 0,
    toolCalls: {},
    source: 'upstream',
  };
  return { model: request.model, parts: [{ type: 'text', text }], stop: cut ? 'max_tokens' : 'end', usage };
}

function turnText(turn: AssistantTurn): string {
  return turn.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The non-streamed JSON reply for an endpoint. */
export function echoJson(endpoint: EndpointId, request: EchoRequest, body: Readonly<Record<string, unknown>>): unknown {
  if (endpoint === 'count_tokens') return { input_tokens: echoInputTokens(request) };
  const turn = echoTurn(request);
  if (endpoint === 'chat') return buildChatCompletion(turn);
  if (endpoint === 'responses') return buildResponse(turn, responsesRequestEcho(body));
  return buildMessage(turn);
}

function streamWriter(endpoint: EndpointId, request: EchoRequest, body: Readonly<Record<string, unknown>>): TurnStreamWriter {
  switch (endpoint) {
    case 'chat':
      return new ChatStreamWriter({ model: request.model, includeUsage: request.includeUsage });
    case 'responses':
      return new ResponsesStreamWriter({ model: request.model, echo: responsesRequestEcho(body) });
    case 'messages':
      return new MessagesStreamWriter({ model: request.model });
    case 'count_tokens':
      throw new Error('count_tokens has no stream');
    case 'images':
      // Not among its native endpoints: the config check refuses an image model routed to it.
      throw new Error('the echo provider makes no images');
  }
}

/**
 * The SSE text of a streamed reply, lazily, one protocol event (or a few that belong together) at a
 * time: a consumer that stops reading stops the generation.
 */
export function* echoFrames(endpoint: EndpointId, request: EchoRequest, body: Readonly<Record<string, unknown>>): Generator<string> {
  const writer = streamWriter(endpoint, request, body);
  const turn = echoTurn(request);
  // Only the input side is known when a real stream starts; the output count comes with the end.
  yield writer.start({ ...turn.usage, outputTokens: 0 });
  for (const piece of tokenPieces(turnText(turn))) yield writer.text(piece);
  yield writer.finish(turn.stop, turn.usage);
}
