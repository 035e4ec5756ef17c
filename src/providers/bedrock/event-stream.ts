/**
 * AWS event-stream framing of InvokeModelWithResponseStream, read into the Anthropic events it
 * carries. Each message is length-prefixed (a 12-byte prelude, headers, payload, CRC); `chunk` events
 * hold `{"bytes": "<base64 of one Anthropic event JSON>"}`; exceptions arrive as messages of type
 * `exception`. The codec is the official one (`@smithy/eventstream-codec`), which also checks the CRCs.
 */
import type * as EventStreamSdk from '@smithy/eventstream-codec';
import type { EventStreamCodec, MessageHeaders } from '@smithy/eventstream-codec';
import type * as Utf8 from '@smithy/util-utf8';
import { tryParse } from '../../json';
import { onFirstUse } from '../../on-first-use';
import type { SseEvent } from '../../protocols/sse';
import type { FrameParser } from '../../wire/types';
import { streamExceptionData } from './errors';

/** The AWS codec, loaded by the first Bedrock stream: a gateway without Bedrock never loads the AWS SDK. */
const codec = onFirstUse((): EventStreamCodec => {
  const { EventStreamCodec } = require('@smithy/eventstream-codec') as typeof EventStreamSdk;
  const { fromUtf8, toUtf8 } = require('@smithy/util-utf8') as typeof Utf8;
  return new EventStreamCodec(toUtf8, fromUtf8);
});
/** Total length (4 bytes) + headers length (4) + prelude CRC (4). */
const PRELUDE_BYTES = 12;

function header(headers: MessageHeaders, name: string): string {
  const value = headers[name]?.value;
  return typeof value === 'string' ? value : '';
}

/** `{"bytes":"…"` and `{"type":"…"` as Bedrock and Anthropic write them: read without a JSON parse. */
const BYTES_FIRST = /^\{"bytes":"([A-Za-z0-9+/=]*)"/;
const TYPE_FIRST = /^\{"type":"([a-z_]+)"/;

/** The Anthropic event a `chunk` payload carries; its `type` is the SSE event name Anthropic would use. */
function chunkEvent(payload: string): SseEvent {
  const bytes = BYTES_FIRST.exec(payload)?.[1] ?? (tryParse(payload) as { bytes?: unknown } | null)?.bytes;
  if (typeof bytes !== 'string') throw new Error('a Bedrock chunk without bytes');
  const data = Buffer.from(bytes, 'base64').toString('utf8');
  const type = TYPE_FIRST.exec(data)?.[1] ?? (tryParse(data) as { type?: unknown } | null)?.type;
  return { event: typeof type === 'string' ? type : null, data };
}

/**
 * Never throws: the relays call it from stream listeners. A message it cannot read (bad length, CRC
 * or payload) becomes an `api_error` event, which ends the stream the way an upstream error does,
 * and everything after it is ignored.
 */
export class BedrockEventStreamParser implements FrameParser {
  private pending: Buffer = Buffer.alloc(0);
  private broken = false;

  /** `maxMessageBytes`: a message announcing more is malformed (server.max_reply_bytes). */
  constructor(private readonly maxMessageBytes = Infinity) {}

  push(chunk: Buffer): SseEvent[] {
    if (this.broken) return [];
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const events: SseEvent[] = [];
    try {
      while (this.pending.length >= PRELUDE_BYTES) {
        const total = this.pending.readUInt32BE(0);
        if (total < PRELUDE_BYTES + 4 || total > this.maxMessageBytes) throw new Error(`an event-stream message of ${total} bytes`);
        if (this.pending.length < total) break;
        const message = codec().decode(this.pending.subarray(0, total));
        this.pending = this.pending.subarray(total);
        const { buffer, byteOffset, byteLength } = message.body;
        const event = this.event(message.headers, Buffer.from(buffer, byteOffset, byteLength).toString('utf8'));
        if (event !== null) events.push(event);
      }
    } catch {
      this.broken = true;
      this.pending = Buffer.alloc(0);
      events.push({ event: 'error', data: streamExceptionData('internalServerException', JSON.stringify({ message: 'AWS Bedrock sent a malformed event-stream message.' })) });
    }
    return events;
  }

  private event(headers: MessageHeaders, payload: string): SseEvent | null {
    switch (header(headers, ':message-type')) {
      case 'event':
        return header(headers, ':event-type') === 'chunk' ? chunkEvent(payload) : null;
      case 'exception':
        return { event: 'error', data: streamExceptionData(header(headers, ':exception-type'), payload) };
      default:
        // `:message-type: error` carries its code and message in headers.
        return { event: 'error', data: streamExceptionData(header(headers, ':error-code'), JSON.stringify({ message: header(headers, ':error-message') })) };
    }
  }
}
