/**
 * Token counts for what the upstream did not count: streams without usage, and the output a broken or
 * abandoned stream produced before it ended. o200k_base (OpenAI's current encoding, via gpt-tokenizer,
 * a pure-TS port of tiktoken with compact rank tables: about half js-tiktoken's memory and several
 * times its speed here) is exact for OpenAI models and a close estimate for Claude, whose tokenizer is
 * not published; the usage record says `estimated` or `partial` either way.
 *
 * BPE costs more than linear time in the length of one unbroken word (a megabyte of random letters is
 * one "word"), so text is counted in slices of 1 KiB, cut before a space where there is one (o200k
 * starts a word with its space, so a cut there changes nothing): the work is then linear in the text.
 * Megabytes still take seconds, so long texts are counted with `countTokensAsync`, which yields to the
 * event loop between slices (docs/limits.md).
 */
type Counter = (text: string) => number;

interface Encoding {
  countTokens: Counter;
  setMergeCacheSize(size: number): void;
}

let counter: Counter | null = null;

/**
 * gpt-tokenizer keeps the merges of up to 100,000 pre-tokens (words) by default, keyed by the word
 * itself: with hostile text of long random words that is hundreds of MiB. A few thousand entries keep
 * the common words of real text, and with slices of 1 KiB no key is longer than that: a few MiB.
 */
const MERGE_CACHE_ENTRIES = 4096;

/**
 * The encoder. Its rank table costs ~60 MiB and about a second of synchronous work to load: the
 * gateway loads it at start (`loadTokenizer`), since loading it on first use under traffic would
 * stall every request for that second.
 */
function o200k(): Counter {
  if (counter === null) {
    const encoding = require('gpt-tokenizer/cjs/encoding/o200k_base') as Encoding;
    encoding.setMergeCacheSize(MERGE_CACHE_ENTRIES);
    counter = encoding.countTokens;
  }
  return counter;
}

/** Loads the encoder now (once per process), before the gateway takes traffic, and warms its code paths. */
export function loadTokenizer(): void {
  if (counter !== null) return;
  const count = o200k();
  // Ordinary words, and an unbroken run of letters and digits (BPE's costly case): the first calls of
  // each kind run unoptimised and slow, better here than under a request.
  for (let i = 0; i < 20; i++) count(`Warming the encoder ${i}: qZ8xK2vN7pL4mR9tW3yB6cH1jF5gD0sA${i}`.repeat(8));
}

/** The longest slice handed to the BPE at once: about a millisecond even for one random word. */
const SLICE = 1024;
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
