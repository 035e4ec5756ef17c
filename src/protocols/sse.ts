import { StringDecoder } from 'node:string_decoder';
import { headOf, skipOf } from './byte-pieces';

/**
 * Server-Sent Events framing, written once for every protocol (WHATWG HTML, "Server-sent events").
 * The parser is incremental and works on raw buffers so the relay can tap a stream without
 * re-encoding it; it yields only complete events.
 */

export interface SseEvent {
  /** The `event:` field; null when the frame had none (OpenAI chat frames). */
  readonly event: string | null;
  /** The `data:` lines joined with `\n` ('' when `raw` holds them). */
  readonly data: string;
  /**
   * Only from a parser made with `rawLineBytes`, for an event with a data line that long: the data as
   * the bytes it came in (the same buffers, not copies), never decoded here.
   */
  readonly raw?: readonly Buffer[];
}

/** Formats one frame. Anthropic and Responses frames carry `event:`; chat frames pass null. */
export function sseFrame(event: string | null, data: string): string {
  return event === null ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The largest event a parser holds when none is given, in bytes: an upstream sending more without an
 * end of event is broken, and holding it would let it grow memory without bound. The default of
 * server.max_reply_bytes, which the relays pass.
 */
const MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024;

const LF_BYTES = Buffer.from('\n');
const DATA_FIELD = Buffer.from('data:');

/** A line kept as its bytes: a data line of an image does not become a string on the event loop. */
interface RawLine {
  readonly pieces: readonly Buffer[];
  readonly bytes: number;
}

/** Thrown by `SseParser.push` when one event outgrows its `maxEventBytes`. */
export class SseEventTooLarge extends Error {
  override readonly name = 'SseEventTooLarge';
}

/**
 * Splits a byte stream into SSE events. Feed chunks in order; each call returns the events completed.
 * Each byte is searched once, and an unfinished line is decoded piece by piece as its chunks arrive
 * and joined once, when its end comes: an event split over many chunks costs time linear in its size,
 * and its end costs one join rather than a copy and a decode of the whole event at once.
 */
export class SseParser {
  /** The decoded pieces of the line under way (not yet ended); the decoder holds a character split between chunks. */
  private pending: string[] = [];
  private readonly decoder = new StringDecoder('utf8');
  private pendingBytes = 0;
  /** The bytes of the event under way (complete lines plus the pending line), for the size cap. */
  private eventBytes = 0;
  /** The previous chunk ended in CR: an LF starting this one belongs to it (CRLF split in two). */
  private afterCr = false;
  private event: string | null = null;
  private dataLines: (string | RawLine)[] = [];
  /** The bytes of the line under way, when lines are kept as bytes until their length is known. */
  private pendingRaw: Buffer[] = [];

  /**
   * `rawLineBytes`: a data line at least that long is not decoded but handed on as its bytes (`raw`),
   * for a reader that sends it elsewhere to be parsed; by default every line is decoded.
   */
  constructor(
    private readonly maxEventBytes = MAX_SSE_EVENT_BYTES,
    private readonly rawLineBytes = Infinity,
  ) {}

  push(chunk: Buffer): SseEvent[] {
    const events: SseEvent[] = [];
    let lineStart = 0;
    if (this.afterCr && chunk.length > 0) {
      this.afterCr = false;
      if (chunk[0] === LF) lineStart = 1;
    }
    // Line ends are found by the native byte search, not a loop over every byte in JavaScript: an
    // event of many MiB (an image) is then a few memchr passes.
    let nextLf = chunk.indexOf(LF, lineStart);
    let nextCr = chunk.indexOf(CR, lineStart);
    while (nextLf !== -1 || nextCr !== -1) {
      const end = nextCr === -1 || (nextLf !== -1 && nextLf < nextCr) ? nextLf : nextCr;
      this.line(this.takeLine(chunk, lineStart, end), events);
      lineStart = end + 1;
      if (end === nextCr) {
        if (lineStart === chunk.length) this.afterCr = true;
        else if (chunk[lineStart] === LF) lineStart++;
      }
      if (nextLf !== -1 && nextLf < lineStart) nextLf = chunk.indexOf(LF, lineStart);
      if (nextCr !== -1 && nextCr < lineStart) nextCr = chunk.indexOf(CR, lineStart);
    }
    if (lineStart < chunk.length) {
      const rest = chunk.subarray(lineStart);
      if (this.rawLineBytes === Infinity) this.pending.push(this.decoder.write(rest));
      else this.pendingRaw.push(rest);
      this.pendingBytes += rest.length;
      this.grow(rest.length);
    }
    return events;
  }

  /** The line ending at `end` in `chunk`, joined with the pieces of it earlier chunks brought. */
  private takeLine(chunk: Buffer, start: number, end: number): string | RawLine {
    this.grow(end - start);
    if (this.pendingRaw.length > 0) return this.takeRawLine(chunk.subarray(start, end));
    if (this.pending.length === 0) return end - start >= this.rawLineBytes ? this.takeRawLine(chunk.subarray(start, end)) : chunk.toString('utf8', start, end);
    this.pending.push(this.decoder.end(chunk.subarray(start, end)));
    const line = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    return line;
  }

  /** A line that came in pieces, in raw mode: kept as bytes when long, else decoded once. */
  private takeRawLine(last: Buffer): string | RawLine {
    const pieces = this.pendingRaw;
    pieces.push(last);
    const bytes = this.pendingBytes + last.length;
    this.pendingRaw = [];
    this.pendingBytes = 0;
    return bytes >= this.rawLineBytes ? { pieces, bytes } : Buffer.concat(pieces, bytes).toString('utf8');
  }

  private grow(bytes: number): void {
    this.eventBytes += bytes;
    if (this.eventBytes > this.maxEventBytes) throw new SseEventTooLarge(`an event stream event exceeds ${this.maxEventBytes} bytes`);
  }

  /** Whether bytes of an unfinished event are held (a stream that ends here was cut short). */
  hasPartialEvent(): boolean {
    return this.pendingBytes > 0 || this.dataLines.length > 0 || this.event !== null;
  }

  private line(line: string | RawLine, events: SseEvent[]): void {
    if (typeof line !== 'string') return this.rawLine(line);
    if (line === '') {
      if (this.dataLines.length > 0) events.push(this.eventOf(this.dataLines));
      this.event = null;
      this.dataLines = [];
      this.eventBytes = 0;
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return; // ':' starts a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.event = value;
  }

  /** A long line kept as bytes: a data line's value joins the event as bytes; any other field is decoded as usual. */
  private rawLine(line: RawLine): void {
    if (!headOf(line.pieces, DATA_FIELD.length).equals(DATA_FIELD)) return this.line(Buffer.concat(line.pieces, line.bytes).toString('utf8'), []);
    const space = headOf(skipOf(line.pieces, DATA_FIELD.length), 1)[0] === 0x20 ? 1 : 0;
    const value = skipOf(line.pieces, DATA_FIELD.length + space);
    this.dataLines.push({ pieces: value, bytes: line.bytes - DATA_FIELD.length - space });
  }

  /** The event the data lines make: a string, or bytes when one of them was kept as bytes. */
  private eventOf(lines: readonly (string | RawLine)[]): SseEvent {
    if (lines.every((line) => typeof line === 'string')) return { event: this.event, data: lines.join('\n') };
    const raw: Buffer[] = [];
    lines.forEach((line, i) => {
      if (i > 0) raw.push(LF_BYTES);
      if (typeof line === 'string') raw.push(Buffer.from(line));
      else raw.push(...line.pieces);
    });
    return { event: this.event, data: '', raw };
  }
}
