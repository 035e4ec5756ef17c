/**
 * Reads a whole OpenAI `chat.completion` (docs/protocols.md#chat-reply) into the neutral turn, and holds what
 * the chat stream reader shares with it: finish reasons, usage and the reasoning-text field.
 */
import { randomHex } from '../../random-hex';
import { nonEmptyStringOrNull, object, type Json } from '../../json';
import { GatewayError } from '../../kernel/errors';
import { chatUsage } from '../../protocols/openai-chat/usage';
import type { AssistantTurn, TurnPart, TurnStop } from '../../protocols/turn';
import { NO_TOKENS, type Usage } from '../../protocols/types';
import type { ToolNameMap } from '../tool-names';

/** Chat `finish_reason` in neutral words (docs/protocols.md#stop-reasons). */
const STOPS: Readonly<Record<string, TurnStop>> = {
  stop: 'end',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

/**
 * The counts a writer renders when the upstream reported none. Billing never takes them for real:
 * `chatReplyHasUsage` is false and the stream reader's `usage()` null in that case.
 */
export const NO_USAGE: Usage = { ...NO_TOKENS, toolCalls: {}, source: 'partial' };

export function invalidResponse(message: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', message);
}

/** The neutral stop for a finish reason; an unknown or missing one reads as a normal end. */
export function stopFromChat(finishReason: unknown): TurnStop {
  return typeof finishReason === 'string' ? (STOPS[finishReason] ?? 'end') : 'end';
}

/**
 * Reasoning text of a message or delta. It is not OpenAI's: DeepSeek, LiteLLM and new-api call it
 * `reasoning_content`, vLLM and OpenRouter `reasoning`.
 */
export function reasoningText(message: Json): string | null {
  return nonEmptyStringOrNull(message.reasoning_content) ?? nonEmptyStringOrNull(message.reasoning);
}

/** An id for a tool call the upstream sent without one; the client needs one to answer the call. */
export function newToolCallId(): string {
  return `call_${randomHex(12)}`;
}

/** Neutral usage from a chat `usage` object (cached tokens split out of the prompt); null when absent. */
export function usageFromChat(usage: unknown): Usage | null {
  const fields = object(usage);
  const counts = Object.keys(fields).length === 0 ? null : chatUsage(fields);
  return counts === null ? null : { ...counts, source: 'upstream' };
}

/** The usage a chat completion reported, or null when it reported none. */
function readChatUsage(body: unknown): Usage | null {
  return usageFromChat(object(body).usage);
}

/** Whether a chat completion reported usage at all (the turn then carries `NO_USAGE`). */
export function chatReplyHasUsage(body: unknown): boolean {
  return readChatUsage(body) !== null;
}

/**
 * The neutral turn for a chat completion. `model` is the client-facing id; the id is left for the
 * writer to mint in its own protocol's style.
 */
export function readChatReply(body: unknown, toolNames: ToolNameMap, model: string): AssistantTurn {
  const completion = object(body);
  if (!Array.isArray(completion.choices)) throw invalidResponse('The upstream reply is not a chat completion: it has no choices.');
  if (completion.choices.length === 0) throw invalidResponse('The upstream chat completion has no choices.');
  const choice = object(completion.choices[0]);
  const message = object(choice.message);
  const refusal = nonEmptyStringOrNull(message.refusal);
  const parts: TurnPart[] = [...reasoningParts(message), ...textParts(message, refusal), ...toolCallParts(message, toolNames)];
  const created = completion.created;
  return {
    model,
    ...(typeof created === 'number' && Number.isSafeInteger(created) && { created }),
    parts,
    // OpenAI reports a refusal beside finish_reason "stop"; the client should hear it was one.
    stop: refusal !== null ? 'refusal' : stopFromChat(choice.finish_reason),
    usage: readChatUsage(body) ?? NO_USAGE,
  };
}

/** Chat reasoning carries no signature; Anthropic clients return it only to Anthropic, which we are not. */
function reasoningParts(message: Json): TurnPart[] {
  const reasoning = reasoningText(message);
  return reasoning === null ? [] : [{ type: 'thinking', text: reasoning, signature: '' }];
}

/** The answer text (a string, or text parts from some compatible upstreams) and any refusal text. */
function textParts(message: Json, refusal: string | null): TurnPart[] {
  const content = Array.isArray(message.content)
    ? message.content.map((part) => nonEmptyStringOrNull(object(part).text) ?? '').join('')
    : (nonEmptyStringOrNull(message.content) ?? '');
  const texts = [content, refusal ?? ''].filter((piece) => piece !== '');
  return texts.map((piece) => ({ type: 'text', text: piece }));
}

function toolCallParts(message: Json, toolNames: ToolNameMap): TurnPart[] {
  if (!Array.isArray(message.tool_calls)) return [];
  return message.tool_calls.map((entry) => {
    const call = object(entry);
    const fn = object(call.function);
    const name = nonEmptyStringOrNull(fn.name);
    if (name === null) throw invalidResponse('The upstream reply has a tool call without a function name.');
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    return { type: 'tool_call', id: nonEmptyStringOrNull(call.id) ?? newToolCallId(), name: toolNames.client(name), arguments: args };
  });
}
