/**
 * Streamed chat without `stream_options.include_usage` reports no usage, yet the provider bills every token,
 * reasoning included, which no count of the visible text recovers. So Tollgate asks for usage on the
 * forwarded request (docs/decisions.md#d3-streamed-usage-is-asked-for-and-hidden) and takes out of the
 * relayed stream what asking added: the `choices: []` usage chunk and the `"usage":null` field OpenAI then
 * puts on every other chunk. The client receives exactly the stream it asked for; the usage tap reads the
 * stream as it came.
 */
import { object, type Json } from '../../json';

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

const FRAME_END = Buffer.from('\n\n');
const USAGE_NULL_LAST = ',"usage":null}';
const USAGE_NULL_FIRST = '"usage":null,';

/**
 * Removes what asking for usage added, frame by frame. Bytes of an unfinished frame wait for the rest
 * (never longer than one frame); the search resumes where it stopped, so the work is linear in the
 * stream's size however it is chunked.
 */
export class UsageChunkRemover {
  private pending: Buffer = Buffer.alloc(0);
  /** Where the search for the next frame end resumes in `pending`. */
  private searchFrom = 0;

  push(chunk: Buffer): Buffer {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    let start = 0;
    for (;;) {
      const end = this.pending.indexOf(FRAME_END, Math.max(start, this.searchFrom));
      if (end === -1) break;
      const frame = this.pending.subarray(start, end + FRAME_END.length);
      const kept = keptFrame(frame);
      if (kept !== null) out.push(kept);
      start = end + FRAME_END.length;
      this.searchFrom = start;
    }
    this.pending = this.pending.subarray(start);
    // The last byte may be the first half of a frame end.
    this.searchFrom = Math.max(0, this.pending.length - 1);
    return out.length === 1 ? out[0] : Buffer.concat(out);
  }

  /** What is left when the stream ends: an unfinished frame is relayed as it came. */
  end(): Buffer {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return rest;
  }
}

/** The frame as the client would have received it without include_usage; null to drop it. */
function keptFrame(frame: Buffer): Buffer | null {
  const text = frame.toString('utf8');
  if (!text.startsWith('data: {')) return frame;
  if (text.includes('"choices":[]') && text.includes('"usage":{')) return null;
  const last = text.lastIndexOf(USAGE_NULL_LAST);
  if (last !== -1) return Buffer.from(text.slice(0, last) + text.slice(last + USAGE_NULL_LAST.length - 1));
  const first = text.indexOf(USAGE_NULL_FIRST);
  if (first !== -1) return Buffer.from(text.slice(0, first) + text.slice(first + USAGE_NULL_FIRST.length));
  return frame;
}
