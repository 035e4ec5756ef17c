/**
 * Side taps that read usage from the bytes a native stream relays, without delaying or changing them:
 * the stream is split into SSE events as it passes. (A whole reply is parsed once: `reply-usage.ts`.)
 */
import { messagesUsageFromEvent } from './anthropic-messages/usage';
import { chatUsageFromChunk } from './openai-chat/usage';
import { responsesUsageFromEvent } from './openai-responses/usage';
import { OutputTokenCount } from './output-count';
import { SseParser, type SseEvent } from './sse';
import type { EndpointId, Usage, UsageTap } from './types';

type Counts = Omit<Usage, 'source'>;

class StreamUsageTap implements UsageTap {
  private readonly parser = new SseParser();
  private counts: Counts | null = null;
  /** The output counted as it passes, in a bounded window: nothing relayed is kept. */
  private readonly output: OutputTokenCount;
  /** Set when the stream could not be parsed (an event over the size cap): the tap stops reading. */
  private broken = false;

  constructor(
    endpoint: EndpointId,
    private readonly fold: (event: string | null, data: string, sofar: Counts | null) => Counts | null,
  ) {
    this.output = new OutputTokenCount(endpoint);
  }

  observe(chunk: Buffer): void {
    if (this.broken) return;
    let events: SseEvent[];
    try {
      events = this.parser.push(chunk);
    } catch {
      // The bytes still reach the client unchanged; only the tap gives up on an oversized event.
      this.broken = true;
      return;
    }
    for (const { event, data } of events) {
      this.counts = this.fold(event, data, this.counts);
      this.output.add(data);
    }
  }

  outputTokens(): Promise<number> {
    return this.output.total();
  }

  result(): Usage | null {
    return this.counts === null ? null : { ...this.counts, source: 'upstream' };
  }
}

/** A tap that never finds usage, for exchanges that are not billed (count_tokens). */
const NO_USAGE: UsageTap = { observe: () => undefined, result: () => null, outputTokens: () => Promise.resolve(0) };

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
