/**
 * Token counts for what the upstream did not count: streams without usage, and the output a broken or
 * abandoned stream produced before it ended. o200k_base (OpenAI's current encoding, via gpt-tokenizer,
 * a pure-TS port of tiktoken with compact rank tables: about half js-tiktoken's memory and several
 * times its speed here) is exact for OpenAI models and a close estimate for Claude, whose tokenizer is
 * not published; the usage record says `estimated` or `partial` either way.
 */
type Counter = (text: string) => number;

let counter: Counter | null = null;

/** The encoder, loaded on first use: its rank table costs ~60 MiB, paid once and only when needed. */
function o200k(): Counter {
  counter ??= (require('gpt-tokenizer/cjs/encoding/o200k_base') as { countTokens: Counter }).countTokens;
  return counter;
}

/** Texts longer than this are counted in slices, keeping the BPE's worst case bounded. */
const SLICE = 64 * 1024;

/** The number of o200k_base tokens in `text`. */
export function countTokens(text: string): number {
  if (text === '') return 0;
  let total = 0;
  for (let start = 0; start < text.length; start += SLICE) total += o200k()(text.slice(start, start + SLICE));
  return total;
}
