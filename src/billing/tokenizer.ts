/**
 * Token counts for what the upstream did not count: streams without usage, and the output a broken or
 * abandoned stream produced before it ended. o200k_base (OpenAI's current encoding, via gpt-tokenizer,
 * a pure-TS port of tiktoken with compact rank tables: about half js-tiktoken's memory and several
 * times its speed here) is exact for OpenAI models and a close estimate for Claude, whose tokenizer is
 * not published; the usage record says `estimated` or `partial` either way.
 *
 * BPE costs more than linear time in the length of one unbroken word (a megabyte of random letters is
 * one "word"), so text is counted in slices of a few KiB, cut before a space where there is one (o200k
 * starts a word with its space, so a cut there changes nothing): the work is then linear in the text.
 * Megabytes still take seconds, so long texts are counted with `countTokensAsync`, which yields to the
 * event loop between slices (docs/limits.md).
 */
type Counter = (text: string) => number;

let counter: Counter | null = null;

/** The encoder, loaded on first use: its rank table costs ~60 MiB, paid once and only when needed. */
function o200k(): Counter {
  counter ??= (require('gpt-tokenizer/cjs/encoding/o200k_base') as { countTokens: Counter }).countTokens;
  return counter;
}

/** The longest slice handed to the BPE at once: a few ms even for one random word. */
const SLICE = 4 * 1024;
/** How long `countTokensAsync` works before it yields. */
const YIELD_AFTER_MS = 8;

/** Where the slice starting at `start` ends: before the last whitespace of its second half, if any. */
function sliceEnd(text: string, start: number): number {
  const limit = start + SLICE;
  if (limit >= text.length) return text.length;
  for (let i = limit - 1; i > start + SLICE / 2; i--) {
    const code = text.charCodeAt(i);
    if (code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d) return i;
  }
  // No space: never split a surrogate pair.
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}

/** The number of o200k_base tokens in `text`, synchronously: for texts of at most tens of KiB. */
export function countTokens(text: string): number {
  let total = 0;
  for (let start = 0; start < text.length; ) {
    const end = sliceEnd(text, start);
    total += o200k()(text.slice(start, end));
    start = end;
  }
  return total;
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The same count as `countTokens`, yielding to the event loop every few ms: for texts of any size.
 * `cancelled` is asked at each yield (a client that left): the count then stops and resolves to what it had.
 */
export async function countTokensAsync(text: string, cancelled: () => boolean = () => false): Promise<number> {
  let total = 0;
  let since = performance.now();
  for (let start = 0; start < text.length && !cancelled(); ) {
    const end = sliceEnd(text, start);
    total += o200k()(text.slice(start, end));
    start = end;
    if (performance.now() - since > YIELD_AFTER_MS) {
      await nextTurn();
      since = performance.now();
    }
  }
  return total;
}
