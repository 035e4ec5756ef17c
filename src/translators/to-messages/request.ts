/**
 * The one Messages request both OpenAI request shapes become. A dialect says how its client protocol
 * spells each part; this module fixes the order the parts are read in (so the first problem a
 * client hears about is the same for every request) and the order of the keys sent.
 */
import type { ModelConfig } from '../../config/types';
import type { Json } from '../../json';
import type { ThinkingFields } from '../reasoning';
import type { ToolNameMap } from '../tool-names';
import type { TranslationContext } from '../types';
import { withoutUndefined } from './fields';
import { samplingFor } from './sampling';
import { rejectForcedTool } from './tools';
import type { Conversation, Turn } from './turns';

/** How one client protocol's request reads as the parts of a Messages request. */
export interface MessagesDialect {
  /** Throws the 400 for the first field whose meaning a Messages upstream cannot honour. */
  readonly rejectUnmappable: (body: Readonly<Json>, model: ModelConfig) => void;
  readonly conversation: (body: Readonly<Json>, toolNames: ToolNameMap) => Conversation;
  readonly maxTokens: (body: Readonly<Json>, model: ModelConfig) => number;
  readonly reasoning: (body: Readonly<Json>, model: ModelConfig, maxTokens: number) => ThinkingFields;
  /** The field that asks for reasoning, named when a forced tool call rules thinking out. */
  readonly effortParam: string;
  /** `searchUses`: the searches a hosted web search may run when the request does not cap them. */
  readonly tools: (body: Readonly<Json>, toolNames: ToolNameMap, searchUses: number) => Json[] | undefined;
  readonly toolChoice: (body: Readonly<Json>, toolNames: ToolNameMap, hasTools: boolean) => Json | undefined;
  /** `stop_sequences`, for protocols that have stop sequences at all. */
  readonly stopSequences?: (body: Readonly<Json>) => string[] | undefined;
  /** The structured-output format for `output_config`. */
  readonly format: (body: Readonly<Json>) => Json | undefined;
  readonly metadata: (body: Readonly<Json>) => Json | undefined;
}

/**
 * The Messages body for `ctx.clientBody`. Keys come in a fixed order (model, system, messages,
 * max_tokens, then the rest) so the same request always serialises the same way.
 */
export function messagesRequest(ctx: TranslationContext, dialect: MessagesDialect): Record<string, unknown> {
  const body = ctx.clientBody;
  dialect.rejectUnmappable(body, ctx.model);
  const { system, messages } = dialect.conversation(body, ctx.toolNames);
  const maxTokens = dialect.maxTokens(body, ctx.model);
  const reasoning = withoutUnsignedContinuation(dialect.reasoning(body, ctx.model, maxTokens), messages);
  const thinking = reasoning.thinking !== undefined;
  const tools = dialect.tools(body, ctx.toolNames, ctx.webSearchMaxUses);
  const toolChoice = dialect.toolChoice(body, ctx.toolNames, tools !== undefined);
  if (thinking) rejectForcedTool(toolChoice, dialect.effortParam);
  return withoutUndefined({
    model: ctx.upstreamModel,
    system: system.length > 0 ? system : undefined,
    messages,
    max_tokens: maxTokens,
    stop_sequences: dialect.stopSequences?.(body),
    ...samplingFor(body, ctx.provider, thinking),
    tools,
    tool_choice: toolChoice,
    thinking: reasoning.thinking,
    output_config: outputConfig(reasoning.output_config, dialect.format(body)),
    metadata: dialect.metadata(body),
    // `stream_options` stays here: whether the client gets a usage chunk is the reply writer's business.
    stream: body.stream === true ? true : undefined,
  });
}

/**
 * Messages requires the assistant turn a tool result answers to open with its signed thinking
 * whenever thinking is on. Most OpenAI-shaped clients never send `thinking_blocks` (or reasoning
 * items) back, so that turn arrives bare; Anthropic's own error then says to disable thinking, which
 * is what happens here, for this request only: the reasoning already done is not repeated.
 */
function withoutUnsignedContinuation(reasoning: ThinkingFields, messages: readonly Turn[]): ThinkingFields {
  if (reasoning.thinking === undefined || !answersUnsignedToolCall(messages)) return reasoning;
  return {};
}

/** Whether the last turn carries tool results for an assistant turn that does not open with thinking. */
function answersUnsignedToolCall(messages: readonly Turn[]): boolean {
  const last = messages.at(-1);
  const answered = messages.at(-2);
  if (last?.role !== 'user' || typeof last.content === 'string' || answered === undefined) return false;
  if (!last.content.some((block) => block.type === 'tool_result')) return false;
  const opening = typeof answered.content === 'string' ? 'text' : answered.content[0]?.type;
  return opening !== 'thinking' && opening !== 'redacted_thinking';
}

/** `output_config`: the effort from reasoning plus the structured-output format, if either is set. */
function outputConfig(effortConfig: Json | undefined, format: Json | undefined): Json | undefined {
  if (format === undefined) return effortConfig;
  return { ...effortConfig, format };
}
