/**
 * Streamed chat without `stream_options.include_usage` reports no usage, yet the provider bills every token,
 * reasoning included, which no count of the visible text recovers. So Tollgate asks for usage on the
 * forwarded request (docs/decisions.md#d3-streamed-usage-is-asked-for-and-hidden) and takes out of the
 * relayed stream what asking added: the `choices: []` usage chunk and the `"usage":null` field OpenAI then
 * puts on every other chunk. The client receives exactly the stream it asked for; the usage tap reads the
 * stream as it came.
 */
import { object, type Json } from '../../json';
import { headOf, indexIn, sliceOf } from '../byte-pieces';

const ASK = Buffer.from('"stream_options":{"include_usage":true},');

/** Whether a streamed chat request left usage out, so the gateway must ask for it. */
export function needsUsageRequested(body: Json): boolean {
  if (body.stream !== true) return false;
  return object(body.stream_options).include_usage !== true;
}

/**
 * `raw` (the bytes to forward) asking for usage. Without `stream_options` the field is written right
 * after the opening brace and the client's bytes stay as they are; a request that has stream_options
 * without include_usage (rare) is re-serialised with it set.
 */
export function withUsageRequested(raw: Buffer, body: Json): Buffer {
  if (body.stream_options === undefined) {
    const brace = raw.indexOf(0x7b);
    return Buffer.concat([raw.subarray(0, brace + 1), ASK, raw.subarray(brace + 1)]);
  }
  const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const options = object(parsed.stream_options);
  return Buffer.from(JSON.stringify({ ...parsed, stream_options: { ...options, include_usage: true } }));
}

const LF = 0x0a;
const DATA_OBJECT = Buffer.from('data: {');
const EMPTY_CHOICES = Buffer.from('"choices":[]');
const USAGE_OBJECT = Buffer.from('"usage":{');
const USAGE_NULL_LAST = Buffer.from(',"usage":null}');
const USAGE_NULL_FIRST = Buffer.from('"usage":null,');
/** A frame that came in pieces this large in all is searched where it is rather than joined first. */
const JOIN_BELOW_BYTES = 64 * 1024;

/**
 * Removes what asking for usage added, frame by frame. Bytes of an unfinished frame are held as the
 * pieces they came in and joined once, when the frame ends (never longer than one frame): each byte is
 * looked at once, so the work is linear in the stream's size however it is chunked and however large
 * one frame is.
 */
export class UsageChunkRemover {
  /** The pieces of the frame under way. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The last byte seen was a line feed: a line feed first in the next chunk ends the frame. */
  private afterLf = false;

  /** The bytes to relay for `chunk`, as pieces: a frame with a field taken out is sent in two, never copied whole. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let start = 0;
    let from = 0;
    if (this.afterLf && chunk.length > 0 && chunk[0] === LF) {
      this.emit(chunk, 0, 1, out);
      start = from = 1;
    }
    for (;;) {
      const end = chunk.indexOf(LF, from);
      if (end === -1 || end + 1 === chunk.length) break;
      if (chunk[end + 1] !== LF) {
        from = end + 1;
        continue;
      }
      this.emit(chunk, start, end + 2, out);
      start = from = end + 2;
    }
    if (start < chunk.length) {
      this.pending.push(chunk.subarray(start));
      this.pendingBytes += chunk.length - start;
    }
    this.afterLf = chunk.length > 0 ? chunk[chunk.length - 1] === LF : this.afterLf;
    return out;
  }

  /** What is left when the stream ends: an unfinished frame is relayed as it came. */
  end(): Buffer {
    const rest = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return rest;
  }

  /** Ends the frame whose last bytes are `chunk[start, end)`, adding what is kept of it to `out`. */
  private emit(chunk: Buffer, start: number, end: number, out: Buffer[]): void {
    let frame = chunk.subarray(start, end);
    if (this.pending.length > 0) {
      const pieces = this.pending;
      const bytes = this.pendingBytes + frame.length;
      pieces.push(frame);
      this.pending = [];
      this.pendingBytes = 0;
      if (bytes >= JOIN_BELOW_BYTES) {
        const kept = keptPieces(pieces);
        if (kept !== null) out.push(...kept);
        return;
      }
      frame = Buffer.concat(pieces, bytes);
    }
    const kept = keptFrame(frame);
    if (kept !== null) out.push(...kept);
  }
}

/**
 * The frame as the client would have received it without include_usage, as the pieces to send; null to
 * drop it. Searched as bytes: a frame of many MiB (an image in a chunk) is never decoded to text here.
 */
function keptFrame(frame: Buffer): Buffer[] | null {
  if (!frame.subarray(0, DATA_OBJECT.length).equals(DATA_OBJECT)) return [frame];
  if (frame.includes(EMPTY_CHOICES) && frame.includes(USAGE_OBJECT)) return null;
  const last = frame.lastIndexOf(USAGE_NULL_LAST);
  if (last !== -1) return [frame.subarray(0, last), frame.subarray(last + USAGE_NULL_LAST.length - 1)];
  const first = frame.indexOf(USAGE_NULL_FIRST);
  if (first !== -1) return [frame.subarray(0, first), frame.subarray(first + USAGE_NULL_FIRST.length)];
  return [frame];
}

/** `keptFrame` of a large frame held as the pieces it came in: searched across them, cut where a field is taken out, never joined. */
function keptPieces(frame: readonly Buffer[]): Buffer[] | null {
  if (!headOf(frame, DATA_OBJECT.length).equals(DATA_OBJECT)) return [...frame];
  if (indexIn(frame, EMPTY_CHOICES) !== -1 && indexIn(frame, USAGE_OBJECT) !== -1) return null;
  const last = indexIn(frame, USAGE_NULL_LAST, true);
  if (last !== -1) return [...sliceOf(frame, 0, last), ...sliceOf(frame, last + USAGE_NULL_LAST.length - 1)];
  const first = indexIn(frame, USAGE_NULL_FIRST);
  if (first !== -1) return [...sliceOf(frame, 0, first), ...sliceOf(frame, first + USAGE_NULL_FIRST.length)];
  return [...frame];
}
