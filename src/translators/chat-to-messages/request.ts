/**
 * An OpenAI Chat Completions request as an Anthropic Messages request (PROTOCOLS.md §4.1). What
 * Messages can express is mapped; what would change the answer and cannot be mapped is a 400 naming
 * the field; what only tunes OpenAI's own service (`seed`, `store`, `metadata`, …) is not sent.
 */
import type { TranslationContext } from '../types';
import { conversationFor } from './messages';
import { invalid, isSet, withoutUndefined, type Json } from './fields';
import { maxTokensFor, outputConfigFor, reasoningFor } from './output';
import { samplingFor, stopSequencesFor } from './sampling';
import { toolChoiceFor, toolsFor } from './tools';
import { rejectUnmappable } from './unmappable';

/**
 * The Messages body for `ctx.clientBody`. Keys come in a fixed order (model, system, messages,
 * max_tokens, then the rest) so the same request always serialises the same way.
 */
export function chatToMessagesRequest(ctx: TranslationContext): Record<string, unknown> {
  const body = ctx.clientBody;
  rejectUnmappable(body);
  const { system, messages } = conversationFor(body.messages, ctx.toolNames);
  const maxTokens = maxTokensFor(body, ctx.model);
  const reasoning = reasoningFor(body, ctx.model, maxTokens);
  const thinking = reasoning.thinking !== undefined;
  const tools = toolsFor(body.tools, ctx.toolNames);
  const toolChoice = toolChoiceFor(body, ctx.toolNames, tools !== undefined);
  if (thinking) rejectForcedTool(toolChoice);
  return withoutUndefined({
    model: ctx.upstreamModel,
    system: system.length > 0 ? system : undefined,
    messages,
    max_tokens: maxTokens,
    stop_sequences: stopSequencesFor(body.stop),
    ...samplingFor(body, ctx.provider, thinking),
    tools,
    tool_choice: toolChoice,
    thinking: reasoning.thinking,
    output_config: outputConfigFor(reasoning.output_config, body.response_format),
    metadata: metadataFor(body.user),
    // `stream_options` stays here: whether the client gets a usage chunk is the reply writer's business.
    stream: body.stream === true ? true : undefined,
  });
}

/** Messages thinks only when the model may choose whether to call a tool. */
function rejectForcedTool(toolChoice: Json | undefined): void {
  if (toolChoice?.type === 'any' || toolChoice?.type === 'tool') {
    throw invalid('tool_choice', "cannot force a tool call while reasoning_effort is set; use 'auto' or drop reasoning_effort.");
  }
}

/** `user` identifies the end user to the upstream, which Messages takes as `metadata.user_id`. */
function metadataFor(user: unknown): Json | undefined {
  if (!isSet(user) || user === '') return undefined;
  if (typeof user !== 'string') throw invalid('user', 'must be a string.');
  return { user_id: user };
}
