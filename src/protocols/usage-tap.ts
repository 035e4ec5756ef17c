/**
 * Side taps that read usage from the bytes a native route relays, without delaying or changing them.
 * Streams are split into SSE events as they pass; plain replies are kept until the end and parsed once.
 */
import { messagesUsageFromBody, messagesUsageFromEvent } from './anthropic-messages/usage';
import { chatUsageFromBody, chatUsageFromChunk } from './openai-chat/usage';
import { responsesUsageFromBody, responsesUsageFromEvent } from './openai-responses/usage';
import { outputTextOf } from './output-text';
import { SseParser } from './sse';
import type { EndpointId, Usage, UsageTap } from './types';

type Counts = Omit<Usage, 'source'>;

/** Replies larger than this are not kept for usage parsing (no real completion body comes near it). */
const MAX_KEPT_BODY_BYTES = 16 * 1024 * 1024;

class BodyUsageTap implements UsageTap {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  constructor(
    private readonly endpoint: EndpointId,
    private readonly read: (text: string) => Counts | null,
  ) {}

  observe(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size <= MAX_KEPT_BODY_BYTES) this.chunks.push(chunk);
  }

  result(): Usage | null {
    if (this.size > MAX_KEPT_BODY_BYTES || this.size === 0) return null;
    const counts = this.read(Buffer.concat(this.chunks, this.size).toString('utf8'));
    return counts === null ? null : { ...counts, source: 'upstream' };
  }

  outputText(): string {
    return this.size > MAX_KEPT_BODY_BYTES ? '' : outputTextOf(this.endpoint, false, this.chunks);
  }
}

class StreamUsageTap implements UsageTap {
  private readonly parser = new SseParser();
  private counts: Counts | null = null;
  /** References to the relayed chunks (no copies), read back only if output must be counted. */
  private readonly chunks: Buffer[] = [];
  constructor(
    private readonly endpoint: EndpointId,
    private readonly fold: (event: string | null, data: string, sofar: Counts | null) => Counts | null,
  ) {}

  observe(chunk: Buffer): void {
    this.chunks.push(chunk);
    for (const { event, data } of this.parser.push(chunk)) this.counts = this.fold(event, data, this.counts);
  }

  outputText(): string {
    return outputTextOf(this.endpoint, true, this.chunks);
  }

  result(): Usage | null {
    return this.counts === null ? null : { ...this.counts, source: 'upstream' };
  }
}

/** A tap that never finds usage, for exchanges that are not billed (count_tokens). */
const NO_USAGE: UsageTap = { observe: () => undefined, result: () => null, outputText: () => '' };

/** The tap for a native reply on `endpoint`. */
export function usageTapFor(endpoint: EndpointId, stream: boolean): UsageTap {
  switch (endpoint) {
    case 'chat':
      return stream
        ? new StreamUsageTap(endpoint, (_event, data, sofar) => chatUsageFromChunk(data) ?? sofar)
        : new BodyUsageTap(endpoint, chatUsageFromBody);
    case 'responses':
      return stream
        ? new StreamUsageTap(endpoint, (event, data, sofar) => responsesUsageFromEvent(event, data) ?? sofar)
        : new BodyUsageTap(endpoint, responsesUsageFromBody);
    case 'messages':
      return stream ? new StreamUsageTap(endpoint, messagesUsageFromEvent) : new BodyUsageTap(endpoint, messagesUsageFromBody);
    case 'count_tokens':
      return NO_USAGE;
  }
}
