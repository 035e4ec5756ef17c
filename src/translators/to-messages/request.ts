/**
 * The one Messages request both OpenAI request shapes become. A dialect says how its client protocol
 * spells each part; this module fixes the order the parts are read in (so the first problem a
 * client hears about is the same for every request) and the order of the keys sent.
 */
import type { ModelConfig } from '../../config/types';
import type { ThinkingFields } from '../reasoning';
import type { ToolNameMap } from '../tool-names';
import type { TranslationContext } from '../types';
import { withoutUndefined, type Json } from './fields';
import { samplingFor } from './sampling';
import { rejectForcedTool } from './tools';
import type { Conversation } from './turns';

/** How one client protocol's request reads as the parts of a Messages request. */
export interface MessagesDialect {
  /** Throws the 400 for the first field whose meaning a Messages upstream cannot honour. */
  readonly rejectUnmappable: (body: Readonly<Json>, model: ModelConfig) => void;
  readonly conversation: (body: Readonly<Json>, toolNames: ToolNameMap) => Conversation;
  readonly maxTokens: (body: Readonly<Json>, model: ModelConfig) => number;
  readonly reasoning: (body: Readonly<Json>, model: ModelConfig, maxTokens: number) => ThinkingFields;
  /** The field that asks for reasoning, named when a forced tool call rules thinking out. */
  readonly effortParam: string;
  readonly tools: (body: Readonly<Json>, toolNames: ToolNameMap) => Json[] | undefined;
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
  const reasoning = dialect.reasoning(body, ctx.model, maxTokens);
  const thinking = reasoning.thinking !== undefined;
  const tools = dialect.tools(body, ctx.toolNames);
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

/** `output_config`: the effort from reasoning plus the structured-output format, if either is set. */
function outputConfig(effortConfig: Json | undefined, format: Json | undefined): Json | undefined {
  if (format === undefined) return effortConfig;
  return { ...effortConfig, format };
}
