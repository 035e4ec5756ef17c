/**
 * The most a request can cost, held before it is forwarded: its prompt at the dearest input-side
 * price plus its output limit at the output price. The prompt is sized from the body's bytes (one
 * token per three bytes, above real ratios for text), so no tokenizer runs on the hot path.
 */
import type { ModelConfig } from '../config/types';
import type { EndpointId } from '../protocols/types';
import { costOf, type NanoPrice } from './prices';

const BYTES_PER_TOKEN = 3;

/** The request's own output limit, by protocol, else the model's configured maximum. */
export function maxOutputTokens(endpoint: EndpointId, body: Readonly<Record<string, unknown>>, model: ModelConfig): number {
  const fields =
    endpoint === 'chat' ? ['max_completion_tokens', 'max_tokens'] : endpoint === 'responses' ? ['max_output_tokens'] : ['max_tokens'];
  for (const field of fields) {
    const value = body[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  }
  return model.max_output_tokens;
}

export interface HoldEstimate {
  readonly amount: bigint;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export function holdAmount(rawBytes: number, maxOutput: number, price: NanoPrice): HoldEstimate {
  const inputTokens = Math.ceil(rawBytes / BYTES_PER_TOKEN);
  // A prompt may turn out to be all cache writes, which can cost more than plain input.
  const inputPrice = [price.input, price.cacheWrite, price.cacheRead].reduce((a, b) => (b > a ? b : a));
  const amount = costOf(
    { inputTokens, cacheWriteTokens: 0, cacheReadTokens: 0, outputTokens: maxOutput },
    { ...price, input: inputPrice },
  );
  return { amount, inputTokens, outputTokens: maxOutput };
}
