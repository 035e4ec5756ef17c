/**
 * Side taps that read usage from the bytes a native route relays, without delaying or changing them.
 * Streams are split into SSE events as they pass; plain replies are kept until the end and parsed once.
 */
import { messagesUsageFromBody, messagesUsageFromEvent } from './anthropic-messages/usage';
import { chatUsageFromBody, chatUsageFromChunk } from './openai-chat/usage';
import { responsesUsageFromBody, responsesUsageFromEvent } from './openai-responses/usage';
import { SseParser } from './sse';
import type { EndpointId, Usage, UsageTap } from './types';

type Counts = Omit<Usage, 'source'>;

/** Replies larger than this are not kept for usage parsing (no real completion body comes near it). */
const MAX_KEPT_BODY_BYTES = 16 * 1024 * 1024;

class BodyUsageTap implements UsageTap {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly read: (text: string) => Counts | null) {}

  observe(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size <= MAX_KEPT_BODY_BYTES) this.chunks.push(chunk);
  }

  result(): Usage | null {
    if (this.size > MAX_KEPT_BODY_BYTES || this.size === 0) return null;
    const counts = this.read(Buffer.concat(this.chunks, this.size).toString('utf8'));
    return counts === null ? null : { ...counts, source: 'upstream' };
  }
}

class StreamUsageTap implements UsageTap {
  private readonly parser = new SseParser();
  private counts: Counts | null = null;
  constructor(private readonly fold: (event: string | null, data: string, sofar: Counts | null) => Counts | null) {}

  observe(chunk: Buffer): void {
    for (const { event, data } of this.parser.push(chunk)) this.counts = this.fold(event, data, this.counts);
  }

  result(): Usage | null {
    return this.counts === null ? null : { ...this.counts, source: 'upstream' };
  }
}

/** A tap that never finds usage, for exchanges that are not billed (count_tokens). */
const NO_USAGE: UsageTap = { observe: () => undefined, result: () => null };

/** The tap for a native reply on `endpoint`. */
export function usageTapFor(endpoint: EndpointId, stream: boolean): UsageTap {
  switch (endpoint) {
    case 'chat':
      return stream
        ? new StreamUsageTap((_event, data, sofar) => chatUsageFromChunk(data) ?? sofar)
        : new BodyUsageTap(chatUsageFromBody);
    case 'responses':
      return stream
        ? new StreamUsageTap((event, data, sofar) => responsesUsageFromEvent(event, data) ?? sofar)
        : new BodyUsageTap(responsesUsageFromBody);
    case 'messages':
      return stream ? new StreamUsageTap(messagesUsageFromEvent) : new BodyUsageTap(messagesUsageFromBody);
    case 'count_tokens':
      return NO_USAGE;
  }
}
