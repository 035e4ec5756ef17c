/** Vocabulary shared by the kernel, the protocol folders and the plugins. */

/** The client-facing endpoints Tollgate serves. */
export type EndpointId = 'chat' | 'responses' | 'messages' | 'count_tokens';

/** Which error envelope an endpoint answers in (spec §7.1). */
export type ErrorShape = 'openai' | 'anthropic';

export interface Endpoint {
  readonly id: EndpointId;
  readonly path: string;
  /** The wire family the client speaks on this endpoint. */
  readonly family: 'openai' | 'anthropic';
  readonly errorShape: ErrorShape;
  /** Whether a model reply is produced (and so billed); count_tokens is not. */
  readonly generates: boolean;
}

export const ENDPOINTS: Readonly<Record<EndpointId, Endpoint>> = {
  chat: { id: 'chat', path: '/v1/chat/completions', family: 'openai', errorShape: 'openai', generates: true },
  responses: { id: 'responses', path: '/v1/responses', family: 'openai', errorShape: 'openai', generates: true },
  messages: { id: 'messages', path: '/v1/messages', family: 'anthropic', errorShape: 'anthropic', generates: true },
  count_tokens: {
    id: 'count_tokens',
    path: '/v1/messages/count_tokens',
    family: 'anthropic',
    errorShape: 'anthropic',
    generates: false,
  },
};

/** Where a usage record's counts came from (billing issue, item 3). */
export type UsageSource = 'upstream' | 'estimated' | 'partial';

/**
 * Token counts of one exchange, each token counted exactly once: `inputTokens` excludes the cache
 * reads and writes (Anthropic semantics), so OpenAI's `prompt_tokens` is split on the way in.
 */
export interface Usage {
  readonly inputTokens: number;
  readonly cacheWriteTokens: number;
  readonly cacheReadTokens: number;
  readonly outputTokens: number;
  readonly source: UsageSource;
}

/** Reads usage from response bytes as they pass, without holding them back. */
export interface UsageTap {
  /** Sees every chunk relayed to the client, in order. */
  observe(chunk: Buffer): void;
  /** The usage seen so far; null when the upstream reported none. */
  result(): Usage | null;
  /** The output tokens relayed so far, counted as they passed (for billing when usage is missing). */
  outputTokens(): Promise<number>;
}
