/** Vocabulary shared by the kernel, the protocol folders and the plugins. */

/** The client-facing endpoints Tollgate serves. */
export type EndpointId = 'chat' | 'responses' | 'messages' | 'count_tokens' | 'images';

/** What a model produces (gateway.yaml `kind`): each endpoint serves the models of one kind. */
export type ModelKind = 'text' | 'image';

/** Which error envelope an endpoint answers in (docs/protocols.md#error-shapes). */
export type ErrorShape = 'openai' | 'anthropic';

export interface Endpoint {
  readonly id: EndpointId;
  readonly path: string;
  /** The wire family the client speaks on this endpoint. */
  readonly family: 'openai' | 'anthropic';
  readonly errorShape: ErrorShape;
  /** Whether a model reply is produced (and so billed); count_tokens is not. */
  readonly generates: boolean;
  /** The kind of model it serves: a model of another kind is refused with a 400 before anything is held. */
  readonly serves: ModelKind;
}

export const ENDPOINTS: Readonly<Record<EndpointId, Endpoint>> = {
  chat: { id: 'chat', path: '/v1/chat/completions', family: 'openai', errorShape: 'openai', generates: true, serves: 'text' },
  responses: { id: 'responses', path: '/v1/responses', family: 'openai', errorShape: 'openai', generates: true, serves: 'text' },
  messages: { id: 'messages', path: '/v1/messages', family: 'anthropic', errorShape: 'anthropic', generates: true, serves: 'text' },
  count_tokens: {
    id: 'count_tokens',
    path: '/v1/messages/count_tokens',
    family: 'anthropic',
    errorShape: 'anthropic',
    generates: false,
    serves: 'text',
  },
  // OpenAI's Images API; no other family has one, so its requests are never translated.
  images: { id: 'images', path: '/v1/images/generations', family: 'openai', errorShape: 'openai', generates: true, serves: 'image' },
};

/** Where a usage record's counts came from (billing issue, item 3). */
type UsageSource = 'upstream' | 'estimated' | 'partial';

/**
 * The kinds of token a provider bills, each at its own price: the one list billing, the stores and
 * the views derive from, so a new kind does not compile until it is priced, stored and shown.
 * `inputTokens` excludes cache reads and writes (Anthropic semantics): OpenAI's `prompt_tokens` is
 * split on the way in, so each token is counted exactly once. Image tokens (an image model's prompt
 * images and generated images, or the Responses `image_generation` tool's) are kinds of their own, at
 * the image prices: never priced as text.
 */
export const TOKEN_KINDS = [
  'inputTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
  'cacheReadTokens',
  'outputTokens',
  'imageInputTokens',
  'imageOutputTokens',
] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];

/** Token counts of one exchange, one number per kind. */
export type TokenCounts = { readonly [K in TokenKind]: number };

/** Cache writes of every lifetime, for protocols that report one total. */
export function cacheWriteTotal(counts: TokenCounts): number {
  return counts.cacheWriteTokens + counts.cacheWrite1hTokens;
}

/**
 * Which side of the exchange each kind counts: the prompt (uncached input, cache writes of every
 * lifetime, cache reads) or the reply. A new kind does not compile until it is placed here, and the
 * hold's dearest input price and the tokens-per-minute input count then take it in by themselves.
 */
const TOKEN_SIDE = {
  inputTokens: 'input',
  cacheWriteTokens: 'input',
  cacheWrite1hTokens: 'input',
  cacheReadTokens: 'input',
  outputTokens: 'output',
  imageInputTokens: 'input',
  imageOutputTokens: 'output',
} as const satisfies Record<TokenKind, 'input' | 'output'>;

/** The kinds priced at an image model's image rates (`image_input`, `image_output`). */
export const IMAGE_TOKEN_KINDS: readonly TokenKind[] = ['imageInputTokens', 'imageOutputTokens'];

/** The kinds that count prompt tokens. */
export const INPUT_TOKEN_KINDS: readonly TokenKind[] = TOKEN_KINDS.filter((kind) => TOKEN_SIDE[kind] === 'input');

/** Every input-side token: uncached input, cache writes of every lifetime, cache reads. */
export function inputTotal(counts: TokenCounts): number {
  let total = 0;
  for (const kind of INPUT_TOKEN_KINDS) total += counts[kind];
  return total;
}

/** Calls of server-side tools the provider bills per call (`web_search`: 3), by tool name. */
export type ToolCalls = Readonly<Record<string, number>>;

export const NO_TOKENS: TokenCounts = {
  inputTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
  outputTokens: 0,
  imageInputTokens: 0,
  imageOutputTokens: 0,
};

/** Counts as a provider reported them: tokens of every kind, and billed server-tool calls. */
export interface UsageCounts extends TokenCounts {
  readonly toolCalls: ToolCalls;
  /**
   * The service tier the provider says it served (OpenAI `service_tier`; Anthropic `usage.service_tier`,
   * or `fast` when `usage.speed` says so): what billing prices the reply at. Absent when it named none.
   */
  readonly servedTier?: string;
  /** Images the reply delivered (Images API `data`, or `image_generation.completed` events); absent elsewhere. */
  readonly images?: number;
  /**
   * Partial images a stream delivered: an Images reply's `image_generation.partial_image` events, or a
   * Responses stream's `response.image_generation_call.partial_image` events before its usage came;
   * absent elsewhere.
   */
  readonly partialImages?: number;
  /**
   * The calls of the Responses `image_generation` tool a stream showed before its usage came, by item
   * id; absent elsewhere, and once usage came (it counts them).
   */
  readonly imageCalls?: Readonly<Record<string, ToolImageCall>>;
  /**
   * True when no usage was reported: a Responses stream whose terminal event has not come, of which
   * only what it showed (its image calls and their partial images) is known. Billing then counts the tokens itself.
   */
  readonly unreported?: true;
}

/** One call of the Responses `image_generation` tool, as its stream showed it. */
export interface ToolImageCall {
  /** Partial images it delivered. */
  readonly partials: number;
  /** Whether its image came (`image_generation_call.completed`, or its output item done with a result). */
  readonly finished: boolean;
}

export interface Usage extends UsageCounts {
  readonly source: UsageSource;
}

/** Reads usage from response bytes as they pass, without holding them back. */
export interface UsageTap {
  /** Sees every chunk relayed to the client, in order. */
  observe(chunk: Buffer): void;
  /** The usage seen so far; null when the upstream reported none (or none that could be read). */
  result(): Usage | null;
  /** The output tokens relayed so far, counted as they passed (for billing when usage is missing). */
  outputTokens(): Promise<number>;
  /** Null while counting keeps up; else a promise (never rejected) the relay waits for before reading on. */
  behind(): Promise<void> | null;
  /** The id of the reply the client received (a Responses `resp_…`), when the stream named one. */
  replyId?(): string | null;
  /** Null once every event seen is read; else a promise (never rejected) of that (a large event is read off the event loop). */
  settled?(): Promise<void> | null;
}
