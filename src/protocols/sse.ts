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
 * Each byte is scanned once: an unfinished line is kept as the pieces it arrived in and joined once,
 * when its end comes, so an event split over many chunks costs time linear in its size.
 */
export class SseParser {
  /** The pieces of the line under way (not yet ended). */
  private pending: Buffer[] = [];
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
    for (let i = lineStart; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte !== LF && byte !== CR) continue;
      this.line(this.takeLine(chunk, lineStart, i), events);
      if (byte === CR) {
        if (i + 1 === chunk.length) this.afterCr = true;
        else if (chunk[i + 1] === LF) i++;
      }
      lineStart = i + 1;
    }
    if (lineStart < chunk.length) {
      const rest = chunk.subarray(lineStart);
      this.pending.push(rest);
      this.pendingBytes += rest.length;
      this.grow(rest.length);
    }
    return events;
  }

  /** The line ending at `end` in `chunk`, joined with the pieces of it earlier chunks brought. */
  private takeLine(chunk: Buffer, start: number, end: number): string {
    this.grow(end - start);
    if (this.pending.length === 0) return chunk.toString('utf8', start, end);
    this.pending.push(chunk.subarray(start, end));
    const line = Buffer.concat(this.pending, this.pendingBytes + end - start).toString('utf8');
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
