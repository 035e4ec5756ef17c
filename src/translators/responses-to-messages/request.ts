/**
 * A Responses API request as an Anthropic Messages request (PROTOCOLS.md §4.8). The Responses input
 * list (messages, function calls, their outputs, reasoning items) becomes a `system` prompt and
 * alternating user/assistant turns; what Messages cannot express is a 400 naming the field; what only
 * tunes OpenAI's own service (`store`, `include`, `service_tier`, …) is not sent.
 */
import type { ModelConfig } from '../../config/types';
import { REDACTED_THINKING_PREFIX } from '../../protocols/openai-responses/writer';
import { invalid, isRecord, isSet, requireArray, requireRecord, requireString, withoutUndefined, type Json } from '../chat-to-messages/fields';
import { samplingFor } from '../chat-to-messages/sampling';
import { imageBlock } from '../images';
import { isReasoningEffort, thinkingFor, type ThinkingFields } from '../reasoning';
import type { ToolNameMap } from '../tool-names';
import type { TranslationContext } from '../types';

/** A Messages content block. */
type Block = Json;

interface Turn {
  readonly role: 'user' | 'assistant';
  /** A user's plain string input stays a string; everything else is blocks. */
  readonly content: string | Block[];
}

/**
 * The Messages body for `ctx.clientBody`. Keys come in a fixed order (model, system, messages,
 * max_tokens, then the rest) so the same request always serialises the same way.
 */
export function responsesToMessagesRequest(ctx: TranslationContext): Record<string, unknown> {
  const body = ctx.clientBody;
  rejectServerState(body, ctx.model);
  const { system, messages } = conversationFor(body, ctx.toolNames);
  const maxTokens = maxTokensFor(body.max_output_tokens, ctx.model);
  const reasoning = reasoningFor(body.reasoning, ctx.model, maxTokens);
  const thinking = reasoning.thinking !== undefined;
  const tools = toolsFor(body.tools, ctx.toolNames);
  const toolChoice = toolChoiceFor(body, ctx.toolNames, tools !== undefined);
  if (thinking) rejectForcedTool(toolChoice);
  return withoutUndefined({
    model: ctx.upstreamModel,
    system: system.length > 0 ? system : undefined,
    messages,
    max_tokens: maxTokens,
    ...samplingFor(body, ctx.provider, thinking),
    tools,
    tool_choice: toolChoice,
    thinking: reasoning.thinking,
    output_config: outputConfigFor(reasoning.output_config, body.text),
    metadata: metadataFor(body),
    stream: body.stream === true ? true : undefined,
  });
}

/**
 * Fields that ask OpenAI to keep or fetch state on its side. Tollgate stores no conversations, items
 * or prompts for Anthropic models, so ignoring them would answer a request the client never sent.
 */
function rejectServerState(body: Readonly<Json>, model: ModelConfig): void {
  if (isSet(body.previous_response_id)) {
    throw invalid(
      'previous_response_id',
      `cannot be used with '${model.id}': Tollgate does not store conversations for Claude models. Send the whole conversation in input instead.`,
    );
  }
  if (isSet(body.conversation)) {
    throw invalid('conversation', `cannot be used with '${model.id}': Tollgate does not store conversations for Claude models. Send the whole conversation in input instead.`);
  }
  if (body.background === true) throw invalid('background', `cannot be true for '${model.id}': Tollgate answers Claude models only while the request is open.`);
  if (isSet(body.prompt)) throw invalid('prompt', `cannot be used with '${model.id}': stored prompts live with OpenAI; send the instructions and input themselves.`);
}

// ---------------------------------------------------------------------------------------------
// The conversation

interface Conversation {
  /** `instructions`, then every system and developer item's text, in order. */
  readonly system: Block[];
  readonly messages: Turn[];
}

/** What one input item contributes: system text, a turn's blocks, or signed reasoning to carry over. */
type ItemPiece =
  | { readonly kind: 'system'; readonly blocks: Block[] }
  | { readonly kind: 'turn'; readonly turn: Turn }
  | { readonly kind: 'thinking'; readonly blocks: Block[] };

/**
 * What opens a conversation the client started with an assistant turn: Messages wants the user to
 * speak first (the same marker as the chat translator uses).
 */
const OPENING_USER_TEXT = '(continued)';

function conversationFor(body: Readonly<Json>, toolNames: ToolNameMap): Conversation {
  const system: Block[] = [];
  if (isSet(body.instructions)) system.push(...nonEmptyText([textBlock(requireString(body.instructions, 'instructions'))]));
  const turns: Turn[] = [];
  // Reasoning items precede the output they led to: their blocks wait for the next assistant content,
  // and are dropped if none comes (a turn of thinking alone would be a prefill Messages refuses).
  let pendingThinking: Block[] = [];
  for (const piece of inputPieces(body.input, toolNames)) {
    if (piece.kind === 'system') {
      system.push(...piece.blocks);
      continue;
    }
    if (piece.kind === 'thinking') {
      pendingThinking.push(...piece.blocks);
      continue;
    }
    const { turn } = piece;
    if (turn.content.length === 0) continue;
    if (turn.role === 'user') {
      turns.push(turn);
      continue;
    }
    turns.push({ role: 'assistant', content: [...pendingThinking, ...asBlocks(turn.content)] });
    pendingThinking = [];
  }
  return { system, messages: normalised(turns) };
}

function inputPieces(input: unknown, toolNames: ToolNameMap): ItemPiece[] {
  if (typeof input === 'string') return [{ kind: 'turn', turn: { role: 'user', content: input } }];
  return requireArray(input, 'input').map((entry, i) => itemPiece(entry, `input[${i}]`, toolNames));
}

function itemPiece(value: unknown, param: string, toolNames: ToolNameMap): ItemPiece {
  const item = requireRecord(value, param);
  const kind = itemKind(item, param);
  switch (kind) {
    case 'message':
      return messagePiece(item, param);
    case 'function_call':
      return { kind: 'turn', turn: { role: 'assistant', content: [toolUseBlock(item, param, toolNames)] } };
    case 'function_call_output':
      return { kind: 'turn', turn: { role: 'user', content: [toolResultBlock(item, param)] } };
    case 'reasoning':
      return { kind: 'thinking', blocks: thinkingBlocks(item, param) };
    case 'item_reference':
      throw invalid(param, 'refers to an item stored by OpenAI; Tollgate does not store items for Claude models. Send the item itself.');
    default:
      throw invalid(
        `${param}.type`,
        `'${kind}' items cannot be sent to this model; input may hold messages, function calls, function call outputs and reasoning items.`,
      );
  }
}

/** An item's type; the SDKs leave it out of plain messages, and item references may omit it too. */
function itemKind(item: Json, param: string): string {
  if (isSet(item.type)) return requireString(item.type, `${param}.type`);
  if (isSet(item.role)) return 'message';
  if (isSet(item.id)) return 'item_reference';
  throw invalid(param, 'must be a message with role and content, or an item with a type.');
}

function messagePiece(item: Json, param: string): ItemPiece {
  const contentParam = `${param}.content`;
  switch (item.role) {
    case 'system':
    case 'developer':
      // Messages has one system prompt; both roles instruct the model, so both go there, in order.
      return { kind: 'system', blocks: contentBlocks(item.content, contentParam, 'system') };
    case 'user':
      if (typeof item.content === 'string') return { kind: 'turn', turn: { role: 'user', content: item.content } };
      return { kind: 'turn', turn: { role: 'user', content: contentBlocks(item.content, contentParam, 'user') } };
    case 'assistant':
      return { kind: 'turn', turn: { role: 'assistant', content: contentBlocks(item.content, contentParam, 'assistant') } };
    default:
      throw invalid(`${param}.role`, `'${String(item.role)}' is not a message role; use 'user', 'assistant', 'system' or 'developer'.`);
  }
}

/** Drops empty turns, merges neighbours of one role, and makes the user speak first. */
function normalised(turns: readonly Turn[]): Turn[] {
  const merged = mergeSameRole(turns.filter((turn) => turn.content.length > 0)).map((turn) => kindsFirst(turn, FIRST_KIND[turn.role]));
  if (merged.length === 0) {
    throw invalid('input', 'must hold at least one user or assistant message, function call or function call output with content; instructions alone leave nothing to answer.');
  }
  if (merged[0].role === 'assistant') merged.unshift({ role: 'user', content: [textBlock(OPENING_USER_TEXT)] });
  return merged;
}

/**
 * Consecutive turns of one role become one turn: parallel function calls share an assistant turn
 * and their outputs (with any user text right after them) one user turn, as Messages expects.
 */
function mergeSameRole(turns: readonly Turn[]): Turn[] {
  const merged: Turn[] = [];
  for (const turn of turns) {
    const previous = merged.at(-1);
    if (previous?.role === turn.role) merged[merged.length - 1] = { role: turn.role, content: [...asBlocks(previous.content), ...asBlocks(turn.content)] };
    else merged.push(turn);
  }
  return merged;
}

/**
 * The blocks Messages wants at the start of each role's turn: a user turn with text before its tool
 * results is rejected, and an assistant turn's thinking comes before what it led to.
 */
const FIRST_KIND: Readonly<Record<Turn['role'], readonly string[]>> = {
  user: ['tool_result'],
  assistant: ['thinking', 'redacted_thinking'],
};

/** Moves blocks of `kinds` to the front of a merged turn; the order within each group is kept. */
function kindsFirst(turn: Turn, kinds: readonly string[]): Turn {
  if (typeof turn.content === 'string') return turn;
  const isFirst = (block: Block): boolean => kinds.includes(String(block.type));
  const first = turn.content.filter(isFirst);
  if (first.length === 0 || first.length === turn.content.length) return turn;
  return { role: turn.role, content: [...first, ...turn.content.filter((block) => !isFirst(block))] };
}

function asBlocks(content: string | Block[]): Block[] {
  return typeof content === 'string' ? nonEmptyText([textBlock(content)]) : content;
}

// ---------------------------------------------------------------------------------------------
// Content parts

function textBlock(text: string): Block {
  return { type: 'text', text };
}

/** Messages rejects empty text blocks (PROTOCOLS.md §4.1). */
function nonEmptyText(blocks: Block[]): Block[] {
  return blocks.filter((block) => block.type !== 'text' || block.text !== '');
}

/** Who a message's content belongs to decides which parts it may hold. */
type ContentOwner = 'system' | 'user' | 'assistant';

function contentBlocks(content: unknown, param: string, owner: ContentOwner): Block[] {
  if (typeof content === 'string') return nonEmptyText([textBlock(content)]);
  return nonEmptyText(requireArray(content, param).map((part, k) => partBlock(part, `${param}[${k}]`, owner)));
}

/** Text of every kind for anyone; a refusal is what an assistant said; images and files are the user's. */
function partBlock(value: unknown, param: string, owner: ContentOwner): Block {
  const part = requireRecord(value, param);
  if (part.type === 'input_text' || part.type === 'output_text') return textBlock(requireString(part.text, `${param}.text`));
  if (part.type === 'refusal' && owner === 'assistant') return textBlock(requireString(part.refusal, `${param}.refusal`));
  if (part.type === 'input_image' && owner === 'user') return imagePartBlock(part, param);
  if (part.type === 'input_file' && owner === 'user') return filePartBlock(part, param);
  throw invalid(`${param}.type`, `'${String(part.type)}' is not a content part a ${owner} message can carry to this model.`);
}

/** `detail` has no Messages equivalent: the model reads the image at its own resolution. */
function imagePartBlock(part: Json, param: string): Block {
  if (isSet(part.image_url)) return imageBlock(requireString(part.image_url, `${param}.image_url`), `${param}.image_url`);
  if (isSet(part.file_id)) throw invalid(`${param}.file_id`, 'refers to a file uploaded to OpenAI, which this model cannot read; send image_url as a data: or https URL.');
  throw invalid(`${param}.image_url`, 'must be set to a data: or https URL.');
}

const PDF_DATA_URL = /^data:application\/pdf;base64,(.*)$/is;

/** A PDF sent inline or by URL; uploaded files live with OpenAI, where an Anthropic model cannot read them. */
function filePartBlock(part: Json, param: string): Block {
  if (isSet(part.file_data)) {
    const pdf = PDF_DATA_URL.exec(requireString(part.file_data, `${param}.file_data`));
    if (pdf === null) throw invalid(`${param}.file_data`, 'must be a data:application/pdf;base64 URL; only PDF files can be sent to this model.');
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf[1] } };
  }
  if (isSet(part.file_url)) {
    const url = requireString(part.file_url, `${param}.file_url`);
    if (!/^https?:\/\//i.test(url)) throw invalid(`${param}.file_url`, 'must be an http(s) URL of a PDF file.');
    return { type: 'document', source: { type: 'url', url } };
  }
  if (isSet(part.file_id)) throw invalid(`${param}.file_id`, 'refers to a file uploaded to OpenAI, which this model cannot read; send file_data as a data:application/pdf;base64 URL.');
  throw invalid(param, 'must carry file_data or file_url.');
}

// ---------------------------------------------------------------------------------------------
// Function calls, their outputs, and reasoning

function toolUseBlock(item: Json, param: string, toolNames: ToolNameMap): Block {
  const callId = nonEmptyString(item.call_id, `${param}.call_id`);
  const name = nonEmptyString(item.name, `${param}.name`);
  return { type: 'tool_use', id: callId, name: toolNames.upstream(name), input: toolInput(item.arguments, `${param}.arguments`) };
}

/** Responses carries arguments as JSON text, Messages as an object; '' is a call without arguments. */
function toolInput(value: unknown, param: string): Json {
  if (typeof value !== 'string') throw invalid(param, 'must be a string of JSON.');
  if (value.trim() === '') return {};
  let input: unknown;
  try {
    input = JSON.parse(value);
  } catch {
    throw invalid(param, 'is not valid JSON.');
  }
  if (!isRecord(input)) throw invalid(param, 'must be a JSON object.');
  return input;
}

/** A `tool_result` block; an empty output omits `content`, which Messages allows. */
function toolResultBlock(item: Json, param: string): Block {
  const toolUseId = nonEmptyString(item.call_id, `${param}.call_id`);
  const output = item.output;
  const content = typeof output === 'string' ? output : outputBlocks(output, `${param}.output`);
  return content.length === 0 ? { type: 'tool_result', tool_use_id: toolUseId } : { type: 'tool_result', tool_use_id: toolUseId, content };
}

/** A function's output given as parts: text, images and PDFs are all things a tool_result can hold. */
function outputBlocks(value: unknown, param: string): Block[] {
  if (!isSet(value)) return [];
  return contentBlocks(value, param, 'user');
}

/**
 * A reasoning item as the thinking block it came from. Only Tollgate's own items carry a signature
 * in `encrypted_content` (see the Responses writer); without one there is nothing Messages would
 * accept back, so the item is dropped. Tollgate writes the whole thinking text as one summary part,
 * so joining the parts restores it exactly.
 */
function thinkingBlocks(item: Json, param: string): Block[] {
  const encrypted = item.encrypted_content;
  if (!isSet(encrypted) || encrypted === '') return [];
  const signature = requireString(encrypted, `${param}.encrypted_content`);
  if (signature.startsWith(REDACTED_THINKING_PREFIX)) return [{ type: 'redacted_thinking', data: signature.slice(REDACTED_THINKING_PREFIX.length) }];
  const summary = isSet(item.summary) ? requireArray(item.summary, `${param}.summary`) : [];
  const texts = summary.map((entry, k) => requireString(requireRecord(entry, `${param}.summary[${k}]`).text, `${param}.summary[${k}].text`));
  return [{ type: 'thinking', thinking: texts.join(''), signature }];
}

function nonEmptyString(value: unknown, param: string): string {
  if (typeof value !== 'string' || value === '') throw invalid(param, 'must be a non-empty string.');
  return value;
}

// ---------------------------------------------------------------------------------------------
// Tools

/** The tool list to send; undefined when the client declared none. */
function toolsFor(value: unknown, toolNames: ToolNameMap): Json[] | undefined {
  if (!isSet(value)) return undefined;
  const tools = requireArray(value, 'tools').map((tool, i) => toolFor(tool, `tools[${i}]`, toolNames));
  return tools.length > 0 ? tools : undefined;
}

function toolFor(value: unknown, param: string, toolNames: ToolNameMap): Json {
  const tool = requireRecord(value, param);
  if (tool.type !== 'function') {
    // Hosted tools (web_search, file_search, code_interpreter, …) run inside OpenAI's service.
    throw invalid(param, `is a '${String(tool.type)}' tool, which this model cannot run; only 'function' tools can be sent to it.`);
  }
  const name = nonEmptyString(tool.name, `${param}.name`);
  // `strict` is not sent: Messages validates tool input against input_schema on its own terms.
  const declared: Json = { name: toolNames.upstream(name) };
  if (isSet(tool.description)) declared.description = requireString(tool.description, `${param}.description`);
  // Messages requires a schema; a function declared without one takes no arguments.
  declared.input_schema = isSet(tool.parameters) ? requireRecord(tool.parameters, `${param}.parameters`) : { type: 'object', properties: {} };
  return declared;
}

const CHOICE_BY_MODE: Readonly<Record<string, string>> = { auto: 'auto', required: 'any', none: 'none' };

/**
 * The Messages tool_choice. `parallel_tool_calls: false` rides on the choice as
 * `disable_parallel_tool_use`, creating an `auto` choice when the client set none. Without tools a
 * choice means nothing and is left out (Responses clients send `auto` out of habit), unless it
 * demands a call that cannot happen.
 */
function toolChoiceFor(body: Readonly<Json>, toolNames: ToolNameMap, hasTools: boolean): Json | undefined {
  const parallel = body.parallel_tool_calls;
  if (isSet(parallel) && typeof parallel !== 'boolean') throw invalid('parallel_tool_calls', 'must be true or false.');
  const choice = explicitChoice(body.tool_choice, toolNames);
  if (!hasTools) {
    if (choice?.type === 'any' || choice?.type === 'tool') throw invalid('tool_choice', 'requires a call, but tools declares no function to call.');
    return undefined;
  }
  if (parallel !== false || choice?.type === 'none') return choice;
  return { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
}

function explicitChoice(value: unknown, toolNames: ToolNameMap): Json | undefined {
  if (!isSet(value)) return undefined;
  if (typeof value === 'string') {
    const type = CHOICE_BY_MODE[value];
    if (type === undefined) throw invalid('tool_choice', "must be 'auto', 'required', 'none' or a function to call.");
    return { type };
  }
  const choice = requireRecord(value, 'tool_choice');
  if (choice.type === 'function') return { type: 'tool', name: toolNames.upstream(nonEmptyString(choice.name, 'tool_choice.name')) };
  // allowed_tools narrows the declared tools per request, hosted choices pick OpenAI's own tools:
  // Messages can only force one function or allow all.
  throw invalid('tool_choice', `of type '${String(choice.type)}' cannot be expressed for this model; use 'auto', 'required', 'none' or a function.`);
}

/** Messages thinks only when the model may choose whether to call a tool. */
function rejectForcedTool(toolChoice: Json | undefined): void {
  if (toolChoice?.type === 'any' || toolChoice?.type === 'tool') {
    throw invalid('tool_choice', "cannot force a tool call while reasoning.effort is set; use 'auto' or drop reasoning.effort.");
  }
}

// ---------------------------------------------------------------------------------------------
// Output: limit, reasoning, format, and who asked

/** `max_output_tokens` (which counts reasoning, as Messages' max_tokens does), else the model's limit. */
function maxTokensFor(value: unknown, model: ModelConfig): number {
  if (!isSet(value)) return model.max_output_tokens;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalid('max_output_tokens', 'must be a positive integer.');
  return value;
}

/** The thinking fields for `reasoning.effort`; none when the client did not ask. `summary` has no equivalent. */
function reasoningFor(value: unknown, model: ModelConfig, maxTokens: number): ThinkingFields {
  if (!isSet(value)) return {};
  const effort = requireRecord(value, 'reasoning').effort;
  if (!isSet(effort)) return {};
  if (!isReasoningEffort(effort)) throw invalid('reasoning.effort', "must be one of 'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'.");
  return thinkingFor(effort, model, maxTokens, 'reasoning.effort');
}

/** `output_config`: the effort from reasoning plus the structured-output format, if either is set. */
function outputConfigFor(effortConfig: Json | undefined, text: unknown): Json | undefined {
  const format = formatFor(text);
  if (format === undefined) return effortConfig;
  return { ...effortConfig, format };
}

/** `text.format` as a Messages output format; plain text is what Messages answers anyway. `verbosity` has no equivalent. */
function formatFor(text: unknown): Json | undefined {
  if (!isSet(text)) return undefined;
  const value = requireRecord(text, 'text').format;
  if (!isSet(value)) return undefined;
  const format = requireRecord(value, 'text.format');
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      // Any JSON object: the schema that admits every object.
      return { type: 'json_schema', schema: { type: 'object' } };
    case 'json_schema':
      return { type: 'json_schema', schema: requireRecord(format.schema, 'text.format.schema') };
    default:
      throw invalid('text.format.type', "must be 'text', 'json_object' or 'json_schema'.");
  }
}

/** `safety_identifier` (or the older `user`) as the end-user id Anthropic keeps for abuse reports. */
function metadataFor(body: Readonly<Json>): Json | undefined {
  const param = isSet(body.safety_identifier) ? 'safety_identifier' : 'user';
  if (!isSet(body[param])) return undefined;
  return { user_id: requireString(body[param], param) };
}
