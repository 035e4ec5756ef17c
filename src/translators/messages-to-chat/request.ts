/**
 * An Anthropic Messages request as an OpenAI Chat Completions request (PROTOCOLS.md §4.7), for
 * Messages clients served by an OpenAI-family model. What chat cannot express and whose loss would
 * change the answer is refused with a 400 naming the field; what only tunes Anthropic's service
 * (cache_control, service_tier, speed, top_k…) is dropped.
 */
import type { ModelConfig } from '../../config/types';
import { GatewayError } from '../../kernel/errors';
import { imageUrl } from '../images';
import type { ToolNameMap } from '../tool-names';
import type { TranslationContext } from '../types';

type Json = Record<string, unknown>;

/** OpenAI accepts at most four stop strings (PROTOCOLS.md §1.1). */
const MAX_STOP_SEQUENCES = 4;

/**
 * Top-level fields whose work Anthropic's API does itself, with nothing on the chat side to do it:
 * dropping them would silently answer a different question.
 */
const UNMAPPABLE_FIELDS: Readonly<Record<string, string>> = {
  container: 'code-execution containers exist only on Anthropic models',
  mcp_servers: "remote MCP servers are called by Anthropic's API, which this model does not go through",
};

/** Anthropic `output_config.effort` levels; chat's `reasoning_effort` takes the same words. */
const EFFORTS = new Set(['low', 'medium', 'high', 'xhigh', 'max']);
const DEFAULT_ADAPTIVE_EFFORT = 'medium';

/** Thinking budgets up to these sizes read as these efforts; anything larger is `high`. */
const EFFORT_BY_BUDGET: ReadonlyArray<readonly [number, string]> = [
  [1024, 'low'],
  [4096, 'medium'],
];

/** Chat needs a filename beside `file_data`; Anthropic documents have only an optional title. */
const DEFAULT_PDF_FILENAME = 'document.pdf';

function invalid(param: string, problem: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `${param}: ${problem}`, { param });
}

function object(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function isAbsent(value: unknown): boolean {
  return value === undefined || value === null;
}

/** The chat request for the client's Messages request; implements [Translator.request] for messages-to-chat. */
export function messagesToChatRequest(ctx: TranslationContext): Record<string, unknown> {
  const body = ctx.clientBody;
  refuseUnmappableFields(body);
  return {
    model: ctx.upstreamModel,
    messages: chatMessages(body, ctx.toolNames),
    ...toolFields(body, ctx.toolNames),
    ...samplingFields(body),
    ...reasoningFields(body, ctx.model),
    ...responseFormatFields(body),
    ...(body.stream === true && { stream: true, stream_options: { include_usage: true } }),
  };
}

function refuseUnmappableFields(body: Json): void {
  for (const [field, reason] of Object.entries(UNMAPPABLE_FIELDS)) {
    const value = body[field];
    if (isAbsent(value) || (Array.isArray(value) && value.length === 0)) continue;
    throw invalid(field, `${reason}; remove ${field} or choose an Anthropic model.`);
  }
}

function chatMessages(body: Json, toolNames: ToolNameMap): Json[] {
  const messages: Json[] = [];
  const system = systemMessage(body.system, 'system');
  if (system !== null) messages.push(system);
  if (!Array.isArray(body.messages)) throw invalid('messages', 'must be an array of messages.');
  body.messages.forEach((message, i) => messages.push(...turnMessages(object(message), `messages[${i}]`, toolNames)));
  return messages;
}

function turnMessages(message: Json, param: string, toolNames: ToolNameMap): Json[] {
  switch (message.role) {
    case 'user':
      return userMessages(message.content, param);
    case 'assistant':
      return assistantMessages(message.content, param, toolNames);
    case 'system': {
      // Claude Code sends mid-conversation system turns; chat keeps them where they stand.
      const system = systemMessage(message.content, `${param}.content`);
      return system === null ? [] : [system];
    }
    default:
      throw invalid(`${param}.role`, "must be 'user', 'assistant' or 'system'.");
  }
}

/**
 * A system prompt as one chat system message; none for an empty one. Blocks are separate sections
 * of the prompt, so they are joined with a blank line rather than run together.
 */
function systemMessage(content: unknown, param: string): Json | null {
  if (isAbsent(content)) return null;
  const text = typeof content === 'string' ? content : textBlocks(content, param).join('\n\n');
  return text === '' ? null : { role: 'system', content: text };
}

/** The texts of a block list that may hold only text blocks (system prompts). */
function textBlocks(content: unknown, param: string): string[] {
  return blockList(content, param).map((block, i) => {
    if (block.type !== 'text') throw invalid(`${param}[${i}]`, `only text blocks are allowed here; got '${String(block.type)}'.`);
    return stringField(block.text);
  });
}

function blockList(content: unknown, param: string): Json[] {
  if (!Array.isArray(content)) throw invalid(param, 'must be a string or an array of content blocks.');
  return content.map(object);
}

function stringField(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/**
 * A user turn. Chat requires the answers to an assistant's tool calls to follow it directly, so the
 * turn's tool results become `tool` messages placed before the rest of its content; images a tool
 * returned cannot go in a `tool` message and follow in a user message of their own.
 */
function userMessages(content: unknown, param: string): Json[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const toolMessages: Json[] = [];
  const toolAttachments: Json[] = [];
  const parts: Json[] = [];
  blockList(content, `${param}.content`).forEach((block, j) => {
    const at = `${param}.content[${j}]`;
    if (block.type === 'tool_result') {
      const result = toolResult(block, at);
      toolMessages.push(result.message);
      toolAttachments.push(...result.attachments);
    } else {
      parts.push(userPart(block, at));
    }
  });
  const messages = [...toolMessages];
  if (toolAttachments.length > 0) messages.push({ role: 'user', content: toolAttachments });
  if (parts.length > 0) messages.push({ role: 'user', content: parts });
  return messages;
}

function userPart(block: Json, param: string): Json {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: stringField(block.text) };
    case 'image':
      return imagePart(block, param);
    case 'document':
      return documentPart(block, param);
    default:
      throw invalid(param, `'${String(block.type)}' blocks cannot be sent to this model.`);
  }
}

function imagePart(block: Json, param: string): Json {
  const url = imageUrl(object(block.source));
  if (url === null) throw invalid(`${param}.source`, 'an image must have a base64 or url source for this model.');
  return { type: 'image_url', image_url: { url } };
}

/** A PDF becomes a `file` part, plain text a text part; chat has no other kind of document. */
function documentPart(block: Json, param: string): Json {
  if (object(block.citations).enabled === true) {
    throw invalid(`${param}.citations`, 'citations are not available on this model; remove them.');
  }
  const source = object(block.source);
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  if (source.type === 'base64' && source.media_type === 'application/pdf' && typeof source.data === 'string') {
    const filename = typeof block.title === 'string' && block.title !== '' ? block.title : DEFAULT_PDF_FILENAME;
    return { type: 'file', file: { filename, file_data: `data:application/pdf;base64,${source.data}` } };
  }
  const kind = source.type === 'base64' ? `base64 ${String(source.media_type)}` : `'${String(source.type)}'`;
  throw invalid(`${param}.source`, `documents must be base64 PDF or plain text for this model; got a ${kind} source.`);
}

interface ToolResultMessages {
  readonly message: Json;
  /** Parts a `tool` message cannot carry (images, PDFs), for a user message after the tool messages. */
  readonly attachments: Json[];
}

function toolResult(block: Json, param: string): ToolResultMessages {
  if (typeof block.tool_use_id !== 'string') throw invalid(`${param}.tool_use_id`, 'must be a string.');
  const attachments: Json[] = [];
  let content: string | Json[];
  if (isAbsent(block.content) || typeof block.content === 'string') {
    content = stringField(block.content);
  } else {
    const texts: Json[] = [];
    blockList(block.content, `${param}.content`).forEach((inner, k) => {
      const part = userPart(inner, `${param}.content[${k}]`);
      (part.type === 'text' ? texts : attachments).push(part);
    });
    content = texts.length > 0 ? texts : '';
  }
  if (block.is_error === true) content = markedAsError(content);
  return { message: { role: 'tool', tool_call_id: block.tool_use_id, content }, attachments };
}

/** Chat has no error flag on tool results, so the failure is said in words the model reads. */
function markedAsError(content: string | Json[]): string | Json[] {
  if (typeof content === 'string') return content === '' ? 'Error' : `Error: ${content}`;
  const [first, ...rest] = content;
  return [{ type: 'text', text: `Error: ${stringField(first.text)}` }, ...rest];
}

/**
 * An assistant turn. Text blocks of one turn are pieces of one answer (split by citations or tool
 * calls), so they are joined as written. Thinking is dropped: OpenAI models cannot take reasoning
 * back, and it was only ever for the client to return to Anthropic.
 */
function assistantMessages(content: unknown, param: string, toolNames: ToolNameMap): Json[] {
  if (typeof content === 'string') return [{ role: 'assistant', content }];
  const texts: string[] = [];
  const toolCalls: Json[] = [];
  blockList(content, `${param}.content`).forEach((block, j) => {
    const at = `${param}.content[${j}]`;
    if (block.type === 'text') texts.push(stringField(block.text));
    else if (block.type === 'tool_use') toolCalls.push(toolCall(block, at, toolNames));
    else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      throw invalid(at, `'${String(block.type)}' blocks cannot be sent to this model.`);
    }
  });
  // A turn that held only reasoning says nothing chat can carry.
  if (texts.length === 0 && toolCalls.length === 0) return [];
  const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return [message];
}

function toolCall(block: Json, param: string, toolNames: ToolNameMap): Json {
  if (typeof block.id !== 'string') throw invalid(`${param}.id`, 'must be a string.');
  if (typeof block.name !== 'string') throw invalid(`${param}.name`, 'must be a string.');
  return {
    id: block.id,
    type: 'function',
    function: { name: toolNames.upstream(block.name), arguments: JSON.stringify(block.input ?? {}) },
  };
}

function toolFields(body: Json, toolNames: ToolNameMap): Json {
  const tools = Array.isArray(body.tools) ? body.tools.map(object) : [];
  if (tools.length === 0) return toolChoiceWithoutTools(body.tool_choice);
  return {
    tools: tools.map((tool, i) => chatTool(tool, `tools[${i}]`, toolNames)),
    ...toolChoiceFields(body.tool_choice, toolNames),
  };
}

function chatTool(tool: Json, param: string, toolNames: ToolNameMap): Json {
  if (!isAbsent(tool.type) && tool.type !== 'custom') {
    throw invalid(param, `the server tool '${String(tool.type)}' runs only on Anthropic models; remove it or choose an Anthropic model.`);
  }
  if (typeof tool.name !== 'string') throw invalid(`${param}.name`, 'must be a string.');
  const fn: Json = { name: toolNames.upstream(tool.name) };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (!isAbsent(tool.input_schema)) fn.parameters = tool.input_schema;
  if (tool.strict === true) fn.strict = true;
  return { type: 'function', function: fn };
}

/**
 * OpenAI rejects `tool_choice` and `parallel_tool_calls` without `tools`. Without tools, `auto` and
 * `none` already hold; forcing a tool that does not exist is the client's mistake to hear about.
 */
function toolChoiceWithoutTools(choice: unknown): Json {
  const type = object(choice).type;
  if (type === 'any' || type === 'tool') throw invalid('tool_choice', `'${type}' needs at least one tool in tools.`);
  return {};
}

function toolChoiceFields(choice: unknown, toolNames: ToolNameMap): Json {
  if (isAbsent(choice)) return {};
  const fields: Json = { tool_choice: chatToolChoice(object(choice), toolNames) };
  if (object(choice).disable_parallel_tool_use === true) fields.parallel_tool_calls = false;
  return fields;
}

function chatToolChoice(choice: Json, toolNames: ToolNameMap): unknown {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (typeof choice.name !== 'string') throw invalid('tool_choice.name', 'must be a string.');
      return { type: 'function', function: { name: toolNames.upstream(choice.name) } };
    default:
      throw invalid('tool_choice.type', "must be 'auto', 'any', 'tool' or 'none'.");
  }
}

/** Limits and sampling. `top_k` is dropped: chat has no such knob, and it only narrows sampling. */
function samplingFields(body: Json): Json {
  const fields: Json = {};
  if (!isAbsent(body.max_tokens)) fields.max_completion_tokens = body.max_tokens;
  if (!isAbsent(body.temperature)) fields.temperature = body.temperature;
  if (!isAbsent(body.top_p)) fields.top_p = body.top_p;
  const stop = stopField(body.stop_sequences);
  if (stop !== null) fields.stop = stop;
  const user = object(body.metadata).user_id;
  if (typeof user === 'string') fields.user = user;
  return fields;
}

function stopField(sequences: unknown): unknown[] | null {
  if (isAbsent(sequences)) return null;
  if (!Array.isArray(sequences)) throw invalid('stop_sequences', 'must be an array of strings.');
  if (sequences.length > MAX_STOP_SEQUENCES) {
    throw invalid('stop_sequences', `this model accepts at most ${MAX_STOP_SEQUENCES} stop sequences; got ${sequences.length}.`);
  }
  return sequences.length === 0 ? null : sequences;
}

/**
 * Thinking as `reasoning_effort`, sent only when thinking was asked for. A model configured with
 * `thinking: none` cannot reason: adaptive thinking lets a model answer without reasoning, so it is
 * dropped there, while an explicit budget is refused like any other request the model cannot meet.
 */
function reasoningFields(body: Json, model: ModelConfig): Json {
  if (isAbsent(body.thinking)) return {};
  const thinking = object(body.thinking);
  switch (thinking.type) {
    case 'disabled':
      return {};
    case 'adaptive':
      return model.thinking === 'none' ? {} : { reasoning_effort: adaptiveEffort(body.output_config) };
    case 'enabled':
      if (model.thinking === 'none') throw invalid('thinking', `the model '${model.id}' does not support reasoning; remove thinking.`);
      return { reasoning_effort: effortForBudget(thinking.budget_tokens) };
    default:
      throw invalid('thinking.type', "must be 'enabled', 'adaptive' or 'disabled'.");
  }
}

function adaptiveEffort(outputConfig: unknown): string {
  const effort = object(outputConfig).effort;
  if (isAbsent(effort)) return DEFAULT_ADAPTIVE_EFFORT;
  if (typeof effort !== 'string' || !EFFORTS.has(effort)) {
    throw invalid('output_config.effort', `must be one of ${[...EFFORTS].join(', ')}.`);
  }
  return effort;
}

function effortForBudget(budget: unknown): string {
  if (typeof budget !== 'number' || !Number.isFinite(budget)) throw invalid('thinking.budget_tokens', 'must be a number.');
  return EFFORT_BY_BUDGET.find(([limit]) => budget <= limit)?.[1] ?? 'high';
}

/**
 * Structured output. Anthropic guarantees the schema is followed, which chat promises only in strict
 * mode; chat also requires a name, which Messages does not have.
 */
function responseFormatFields(body: Json): Json {
  const format = object(body.output_config).format;
  if (isAbsent(format)) return {};
  const { type, schema } = object(format);
  if (type !== 'json_schema') throw invalid('output_config.format.type', "must be 'json_schema'.");
  if (Object.keys(object(schema)).length === 0) throw invalid('output_config.format.schema', 'must be a JSON Schema object.');
  return { response_format: { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } } };
}
