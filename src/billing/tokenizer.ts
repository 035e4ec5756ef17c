/**
 * Token counts for what the upstream did not count: streams without usage, and the output a broken or
 * abandoned stream produced before it ended. o200k_base (OpenAI's current encoding, via js-tiktoken, a
 * pure-JS port of tiktoken) is exact for OpenAI models and a close estimate for Claude, whose own
 * tokenizer is not published; the usage record says `estimated` or `partial` either way.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import o200kBase from 'js-tiktoken/ranks/o200k_base';

let encoder: Tiktoken | null = null;

/** The encoder, built on first use: loading its ranks costs ~100 ms, paid once and only when needed. */
function o200k(): Tiktoken {
  encoder ??= new Tiktoken(o200kBase);
  return encoder;
}

/** Texts longer than this are counted in slices, keeping the BPE's worst case bounded. */
const SLICE = 64 * 1024;

/** The number of o200k_base tokens in `text`. */
export function countTokens(text: string): number {
  if (text === '') return 0;
  let total = 0;
  for (let start = 0; start < text.length; start += SLICE) total += o200k().encode(text.slice(start, start + SLICE)).length;
  return total;
}
