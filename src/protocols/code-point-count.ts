/**
 * The length in Unicode code points of a text that arrives in fragments, counted as they pass so the
 * text itself need not be kept: citations place a passage by code points (Python's string indexes),
 * and a stream of any length must not hold its answer to measure it. A surrogate pair split across
 * two fragments counts once, as it does in the joined text.
 */
import { codePoints } from './openai-responses/items';

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

export class CodePointCount {
  private count = 0;
  /** The last fragment ended with a high surrogate: a low one starting the next completes the pair. */
  private pending = false;

  get total(): number {
    return this.count;
  }

  add(fragment: string): void {
    if (fragment === '') return;
    this.count += codePoints(fragment);
    if (this.pending && isLowSurrogate(fragment.charCodeAt(0))) this.count--;
    // A high surrogate last in a fragment has nothing after it to pair with inside the fragment.
    this.pending = isHighSurrogate(fragment.charCodeAt(fragment.length - 1));
  }
}
