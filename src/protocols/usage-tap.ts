/**
 * Side taps that read usage from the bytes a native stream relays, without delaying or changing them:
 * the stream is split into SSE events as it passes. (A whole reply is parsed once: `reply-usage.ts`.)
 */
import { messagesUsageFromEvent } from './anthropic-messages/usage';
import { chatUsageFromChunk } from './openai-chat/usage';
import { responsesUsageFromEvent } from './openai-responses/usage';
import { outputTextOf } from './output-text';
import { SseParser } from './sse';
import type { EndpointId, Usage, UsageTap } from './types';

type Counts = Omit<Usage, 'source'>;

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

/** The tap for a native stream on `endpoint` (whole replies are read once: see `reply-usage.ts`). */
export function usageTapFor(endpoint: EndpointId): UsageTap {
  switch (endpoint) {
    case 'chat':
      return new StreamUsageTap(endpoint, (_event, data, sofar) => chatUsageFromChunk(data) ?? sofar);
    case 'responses':
      return new StreamUsageTap(endpoint, (event, data, sofar) => responsesUsageFromEvent(event, data) ?? sofar);
    case 'messages':
      return new StreamUsageTap(endpoint, messagesUsageFromEvent);
    case 'count_tokens':
      return NO_USAGE;
  }
}
