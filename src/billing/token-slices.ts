/**
 * How a text is fed to the BPE, in whichever thread counts it. BPE costs more than linear time in the
 * length of one unbroken word (a megabyte of random letters is one "word"), so text is counted in
 * slices of 1 KiB, cut before a space where there is one (o200k starts a word with its space, so a
 * cut there changes nothing; a cut inside a run of line breaks, which o200k merges, can add one token):
 * the work is then linear in the text. Megabytes still take seconds, so
 * the count yields to its event loop every few ms, where it can be cancelled (docs/limits.md).
 */

/** The encoder's count of one slice. */
export type Counter = (text: string) => number;

/** The longest slice handed to the BPE at once: about a millisecond even for one random word. */
const SLICE = 1024;
/** How long a count works before it yields. */
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

/** The slices `text` is counted in, in order. */
export function* tokenSlices(text: string): Generator<string> {
  for (let start = 0; start < text.length; ) {
    const end = sliceEnd(text, start);
    yield text.slice(start, end);
    start = end;
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The tokens of `text`, slice by slice, yielding to the event loop every few ms. `cancelled` is
 * asked at each yield: the count then stops and resolves to what it had.
 */
export async function countSliced(count: Counter, text: string, cancelled: () => boolean): Promise<number> {
  let total = 0;
  let since = performance.now();
  for (const slice of tokenSlices(text)) {
    if (cancelled()) break;
    total += count(slice);
    if (performance.now() - since > YIELD_AFTER_MS) {
      await nextTurn();
      since = performance.now();
    }
  }
  return total;
}
