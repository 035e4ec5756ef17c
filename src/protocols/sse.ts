import { StringDecoder } from 'node:string_decoder';

/**
 * Server-Sent Events framing, written once for every protocol (WHATWG HTML, "Server-sent events").
 * The parser is incremental and works on raw buffers so the relay can tap a stream without
 * re-encoding it; it yields only complete events.
 */

export interface SseEvent {
  /** The `event:` field; null when the frame had none (OpenAI chat frames). */
  readonly event: string | null;
  /** The `data:` lines joined with `\n`. */
  readonly data: string;
}

/** Formats one frame. Anthropic and Responses frames carry `event:`; chat frames pass null. */
export function sseFrame(event: string | null, data: string): string {
  return event === null ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The largest event the parser holds, in bytes: an upstream sending more without an end of event is
 * broken, and holding it would let it grow memory without bound. As large as the largest plain reply.
 */
const MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024;

/** Thrown by `SseParser.push` when one event outgrows `MAX_SSE_EVENT_BYTES`. */
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
  private dataLines: string[] = [];

  constructor(private readonly maxEventBytes = MAX_SSE_EVENT_BYTES) {}

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
      this.pending.push(this.decoder.write(rest));
      this.pendingBytes += rest.length;
      this.grow(rest.length);
    }
    return events;
  }

  /** The line ending at `end` in `chunk`, joined with the pieces of it earlier chunks brought. */
  private takeLine(chunk: Buffer, start: number, end: number): string {
    this.grow(end - start);
    if (this.pending.length === 0) return chunk.toString('utf8', start, end);
    this.pending.push(this.decoder.end(chunk.subarray(start, end)));
    const line = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    return line;
  }

  private grow(bytes: number): void {
    this.eventBytes += bytes;
    if (this.eventBytes > this.maxEventBytes) throw new SseEventTooLarge(`an event stream event exceeds ${this.maxEventBytes} bytes`);
  }

  /** Whether bytes of an unfinished event are held (a stream that ends here was cut short). */
  hasPartialEvent(): boolean {
    return this.pendingBytes > 0 || this.dataLines.length > 0 || this.event !== null;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.dataLines.length > 0) events.push({ event: this.event, data: this.dataLines.join('\n') });
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
}
