/**
 * o200k_base counts made in the test's own thread, straight from gpt-tokenizer, to check the counts
 * the gateway's tokenizer worker answers against.
 */
import { tokenSlices } from '../../src/billing/token-slices';

type Counter = (text: string) => number;

let encoder: Counter | null = null;

/** The encoder's count of `text` as one piece. */
export function encoderCount(text: string): number {
  encoder ??= (require('gpt-tokenizer/cjs/encoding/o200k_base') as { countTokens: Counter }).countTokens;
  return encoder(text);
}

/** The encoder's count of `text` in the 1 KiB slices the gateway counts it in (the same as whole for single-spaced prose). */
export function slicedCount(text: string): number {
  let total = 0;
  for (const slice of tokenSlices(text)) total += encoderCount(slice);
  return total;
}
