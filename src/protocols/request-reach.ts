/**
 * How far a request's bill can reach beyond its body: the output it may produce, the input it pulls in
 * by reference (a stored response, a conversation, a file, a prompt template, what server tools fetch),
 * and the server-tool calls the provider bills per call. Read once per request from the parsed body,
 * so the hold can cover what the upstream will really bill (docs/faults.md#f12).
 */
import { isObject, type Json } from '../json';
import type { EndpointId } from '../protocols/types';

export interface RequestReach {
  /** The request's own output limit (null: it set none). */
  readonly outputLimit: number | null;
  /** Answers requested at once (chat `n`); each is billed. */
  readonly choices: number;
  /** Ids of earlier replies whose input and output the upstream bills again (`previous_response_id`). */
  readonly responseIds: readonly string[];
  /** Ids of stored conversations the upstream prepends. */
  readonly conversationIds: readonly string[];
  /** Input of unknown size is pulled in (file ids, prompt templates, server-tool results). */
  readonly unsizedInput: boolean;
  /** Per-call-billed server tools the request enables, with the calls it allows (null: not capped). */
  readonly toolCalls: Readonly<Record<string, number | null>>;
  /** An Images request's size and quality (null: not named, or `auto`); null on every other endpoint. */
  readonly image?: ImageAsk;
  /**
   * What each call of the Responses `image_generation` tool asks of its image: the tool's size and
   * quality, and the partial images it streams (`stream: true`); absent without the tool.
   */
  readonly toolImage?: ImageAsk;
}

/** What an Images request asks of each image: the parts of a `size/quality` price or token-table key. */
export interface ImageAsk {
  readonly size: string | null;
  readonly quality: string | null;
  /** Partial images streamed before each finished one (`stream: true` with `partial_images`); 0 or absent: none. */
  readonly partials?: number;
}

/** OpenAI's largest `n`; a larger one is the upstream's to refuse, and never held beyond this. */
const MAX_CHOICES = 128;

/** Server tools by the prefix of their request `type`, named as prices name them; their results are input of unknown size. */
const MESSAGES_SERVER_TOOLS: ReadonlyArray<readonly [prefix: string, tool: string]> = [
  ['web_search_', 'web_search'],
  ['web_fetch_', 'web_fetch'],
  ['code_execution_', 'code_execution'],
];
const RESPONSES_HOSTED_TOOLS: Readonly<Record<string, string>> = {
  web_search: 'web_search',
  web_search_preview: 'web_search',
  web_search_2025_08_26: 'web_search',
  web_search_preview_2025_03_11: 'web_search',
  file_search: 'file_search',
  code_interpreter: 'code_interpreter',
  image_generation: 'image_generation',
  mcp: 'mcp',
};

/** The reach of a parsed request body on `endpoint`; `raw` is its bytes, scanned for file ids. */
export function requestReach(endpoint: EndpointId, body: Json, raw: Buffer): RequestReach {
  // A file id anywhere (chat file parts, Responses input_file/input_image, Messages file sources) pulls
  // in input the body does not show. An id inside a JSON string would be escaped, so this cannot misfire
  // on text that merely mentions one.
  const fileInput = raw.includes('"file_id"');
  switch (endpoint) {
    case 'chat':
      return {
        outputLimit: firstLimit(body, ['max_completion_tokens', 'max_tokens']),
        choices: choicesOf(body.n),
        responseIds: [],
        conversationIds: [],
        unsizedInput: fileInput,
        toolCalls: isObject(body.web_search_options) ? { web_search: 1 } : {},
      };
    case 'responses':
      return responsesReach(body, fileInput);
    case 'messages':
      return messagesReach(body, fileInput);
    case 'count_tokens':
      return { outputLimit: 0, choices: 1, responseIds: [], conversationIds: [], unsizedInput: false, toolCalls: {} };
    case 'images':
      return {
        outputLimit: null,
        choices: choicesOf(body.n),
        responseIds: [],
        conversationIds: [],
        unsizedInput: false,
        toolCalls: {},
        image: { size: named(body.size), quality: named(body.quality), partials: body.stream === true ? partialsOf(body.partial_images) : 0 },
      };
  }
}

/** OpenAI's most partial images per image; more is the upstream's to refuse, and never held beyond this. */
const MAX_PARTIAL_IMAGES = 3;

function partialsOf(value: unknown): number {
  return Math.min(limit(value) ?? 0, MAX_PARTIAL_IMAGES);
}

/** A size or quality the request names; `auto` leaves the choice to the provider, as leaving it out does. */
function named(value: unknown): string | null {
  return typeof value === 'string' && value !== '' && value !== 'auto' ? value : null;
}

function responsesReach(body: Json, fileInput: boolean): RequestReach {
  const toolCalls: Record<string, number | null> = {};
  const cap = limit(body.max_tool_calls);
  let toolInput = false;
  let toolImage: ImageAsk | undefined;
  for (const tool of arrayOf(body.tools)) {
    const name = RESPONSES_HOSTED_TOOLS[String(tool.type)];
    if (name === undefined) continue;
    toolCalls[name] = cap;
    toolInput = true;
    if (name === 'image_generation' && toolImage === undefined) {
      toolImage = { size: named(tool.size), quality: named(tool.quality), partials: body.stream === true ? partialsOf(tool.partial_images) : 0 };
    }
  }
  const conversation = typeof body.conversation === 'string' ? body.conversation : isObject(body.conversation) ? body.conversation.id : undefined;
  const reach: RequestReach = {
    outputLimit: firstLimit(body, ['max_output_tokens']),
    choices: 1,
    responseIds: typeof body.previous_response_id === 'string' ? [body.previous_response_id] : [],
    conversationIds: typeof conversation === 'string' ? [conversation] : [],
    unsizedInput: fileInput || toolInput || isObject(body.prompt),
    toolCalls,
  };
  return toolImage === undefined ? reach : { ...reach, toolImage };
}

function messagesReach(body: Json, fileInput: boolean): RequestReach {
  const toolCalls: Record<string, number | null> = {};
  let toolInput = false;
  for (const tool of arrayOf(body.tools)) {
    const type = typeof tool.type === 'string' ? tool.type : '';
    const known = MESSAGES_SERVER_TOOLS.find(([prefix]) => type.startsWith(prefix));
    if (known === undefined) continue;
    toolCalls[known[1]] = limit(tool.max_uses);
    toolInput = true;
  }
  return {
    outputLimit: firstLimit(body, ['max_tokens']),
    choices: 1,
    responseIds: [],
    conversationIds: [],
    unsizedInput: fileInput || toolInput || Array.isArray(body.mcp_servers) || body.container !== undefined,
    toolCalls,
  };
}

function firstLimit(body: Json, fields: readonly string[]): number | null {
  for (const field of fields) {
    const value = limit(body[field]);
    if (value !== null) return value;
  }
  return null;
}

/** A non-negative integer limit (any size: the hold clamps it to the model's maximum), else null. */
function limit(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
}

function choicesOf(n: unknown): number {
  return typeof n === 'number' && Number.isInteger(n) && n > 1 ? Math.min(n, MAX_CHOICES) : 1;
}

function arrayOf(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}
