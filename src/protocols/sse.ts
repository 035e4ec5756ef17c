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

/** Splits a byte stream into SSE events. Feed chunks in order; each call returns the events completed. */
export class SseParser {
  private pending: Buffer | null = null;
  private event: string | null = null;
  private dataLines: string[] = [];

  push(chunk: Buffer): SseEvent[] {
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    const events: SseEvent[] = [];
    let lineStart = 0;
    for (let i = 0; i < buf.length; i++) {
      const byte = buf[i];
      if (byte !== LF && byte !== CR) continue;
      // A CR at the very end may be the first half of CRLF: wait for the next chunk.
      if (byte === CR && i === buf.length - 1) break;
      this.line(buf.toString('utf8', lineStart, i), events);
      if (byte === CR && buf[i + 1] === LF) i++;
      lineStart = i + 1;
    }
    this.pending = lineStart < buf.length ? buf.subarray(lineStart) : null;
    return events;
  }

  /** Whether bytes of an unfinished event are held (a stream that ends here was cut short). */
  hasPartialEvent(): boolean {
    return this.pending !== null || this.dataLines.length > 0 || this.event !== null;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.dataLines.length > 0) events.push({ event: this.event, data: this.dataLines.join('\n') });
      this.event = null;
      this.dataLines = [];
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
