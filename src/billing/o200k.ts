/**
 * The o200k_base encoder (OpenAI's current encoding, via gpt-tokenizer, a pure-TS port of tiktoken
 * with compact rank tables: about half js-tiktoken's memory and several times its speed here), loaded
 * once per thread that asks for it. Its rank table costs ~58 MiB and a fraction of a second to a second
 * of synchronous work, which is why the gateway counts in a worker thread (`tokenizer-thread.ts`):
 * the main thread loads it only when that worker cannot run (`tokenizer.ts`).
 */
import { countSliced, type Counter } from './token-slices';

interface Encoding {
  countTokens: Counter;
  setMergeCacheSize(size: number): void;
}

/**
 * gpt-tokenizer keeps the merges of up to 100,000 pre-tokens (words) by default, keyed by the word
 * itself: with hostile text of long random words that is hundreds of MiB. A few thousand entries keep
 * the common words of real text, and with slices of 1 KiB no key is longer than that: a few MiB.
 */
const MERGE_CACHE_ENTRIES = 4096;

let counter: Counter | null = null;

/** The encoder's count, loading it (synchronously) on the first call in this thread. */
export function o200k(): Counter {
  if (counter === null) {
    const encoding = require('gpt-tokenizer/cjs/encoding/o200k_base') as Encoding;
    encoding.setMergeCacheSize(MERGE_CACHE_ENTRIES);
    counter = encoding.countTokens;
  }
  return counter;
}

/** The tokens of `text`, counted in this thread in slices that yield; see `countSliced`. */
export function countInThisThread(text: string, cancelled: () => boolean): Promise<number> {
  return countSliced(o200k(), text, cancelled);
}
