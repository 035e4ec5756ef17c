/**
 * Bytes kept as the pieces they came in (the socket's chunks of one large event): read and searched
 * where they are, never copied into one buffer, so a frame of many MiB costs a few native searches.
 */

/** The first `n` bytes of `pieces` from piece `from` on (fewer when they hold fewer). */
export function headOf(pieces: readonly Buffer[], n: number, from = 0): Buffer {
  const out: Buffer[] = [];
  let size = 0;
  for (let i = from; i < pieces.length && size < n; i++) {
    const piece = pieces[i].subarray(0, n - size);
    out.push(piece);
    size += piece.length;
  }
  return Buffer.concat(out, size);
}

/** `pieces` without their first `n` bytes. */
export function skipOf(pieces: readonly Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  for (const piece of pieces) {
    if (n >= piece.length) {
      n -= piece.length;
      continue;
    }
    out.push(n > 0 ? piece.subarray(n) : piece);
    n = 0;
  }
  return out;
}

/** The bytes of `pieces` in `[start, end)`, as pieces. */
export function sliceOf(pieces: readonly Buffer[], start: number, end = Infinity): Buffer[] {
  const out: Buffer[] = [];
  let offset = 0;
  for (const piece of pieces) {
    const from = Math.max(start - offset, 0);
    const to = Math.min(end - offset, piece.length);
    if (from < to) out.push(from === 0 && to === piece.length ? piece : piece.subarray(from, to));
    offset += piece.length;
    if (offset >= end) break;
  }
  return out;
}

/** Starts of `needle` in `window` that fall before `limit`. */
function startsIn(window: Buffer, needle: Buffer, limit: number): number[] {
  const starts: number[] = [];
  for (let at = window.indexOf(needle); at !== -1 && at < limit; at = window.indexOf(needle, at + 1)) starts.push(at);
  return starts;
}

/**
 * Where `needle` first (or, with `last`, last) occurs in the bytes of `pieces`, as an offset into them
 * all; -1 when it does not. Each piece is searched natively, each seam through a window of twice the
 * needle's length, from the end when the last is wanted (a field near a frame's end is found at once).
 */
export function indexIn(pieces: readonly Buffer[], needle: Buffer, last = false): number {
  const n = needle.length;
  const starts: number[] = [];
  let offset = 0;
  for (const piece of pieces) {
    starts.push(offset);
    offset += piece.length;
  }
  for (let k = 0; k < pieces.length; k++) {
    const i = last ? pieces.length - 1 - k : k;
    const piece = pieces[i];
    const seamStart = Math.max(0, piece.length - n + 1);
    // An occurrence fully inside a piece starts before any that runs over its end into the next.
    const seam = () => startsIn(Buffer.concat([piece.subarray(seamStart), headOf(pieces, n - 1, i + 1)]), needle, piece.length - seamStart);
    if (last) {
      const across = seam();
      if (across.length > 0) return starts[i] + seamStart + across[across.length - 1];
      const inside = piece.lastIndexOf(needle);
      if (inside !== -1) return starts[i] + inside;
    } else {
      const inside = piece.indexOf(needle);
      if (inside !== -1) return starts[i] + inside;
      const across = seam();
      if (across.length > 0) return starts[i] + seamStart + across[0];
    }
  }
  return -1;
}
