/**
 * Side taps that read usage from the bytes a native stream relays, without delaying or changing them:
 * the stream is split into SSE events as it passes. (A whole reply is parsed once: `reply-usage.ts`.)
 */
import { messagesUsageFromEvent } from './anthropic-messages/usage';
import { chatUsageFromChunk } from './openai-chat/usage';
import { responseIdFromEvent, responsesUsageFromEvent } from './openai-responses/usage';
import { OutputTokenCount } from './output-count';
import { SseParser, type SseEvent } from './sse';
import type { EndpointId, Usage, UsageCounts, UsageTap } from './types';

/** Folds one event into the usage so far: the new counts, `sofar` when it says nothing, null when unreadable. */
type Fold = (event: string | null, data: string, sofar: UsageCounts | null) => UsageCounts | null;

class StreamUsageTap implements UsageTap {
  private readonly parser = new SseParser();
  private counts: UsageCounts | null = null;
  /** A usage report that could not be read spoils the stream's usage: billing then counts for itself. */
  private unreadable = false;
  private id: string | null = null;
  /** The output counted as it passes, in a bounded window: nothing relayed is kept. */
  private readonly output: OutputTokenCount;
  /** Set when the stream could not be parsed (an event over the size cap): the tap stops reading. */
  private broken = false;

  constructor(
    private readonly endpoint: EndpointId,
    private readonly fold: Fold,
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
      if (this.endpoint === 'responses') this.id = responseIdFromEvent(event, data) ?? this.id;
      this.output.add(data);
      if (this.unreadable) continue;
      const before = this.counts;
      const after = this.fold(event, data, before);
      if (after === null && mentionsUsage(data)) this.unreadable = true;
      this.counts = after ?? before;
    }
  }

  outputTokens(): Promise<number> {
    return this.output.total();
  }

  behind(): Promise<void> | null {
    return this.output.behind();
  }

  result(): Usage | null {
    return this.unreadable || this.counts === null ? null : { ...this.counts, source: 'upstream' };
  }

  replyId(): string | null {
    return this.id;
  }
}

/** Whether an event carries a usage object at all (so a fold that read nothing means unreadable). */
function mentionsUsage(data: string): boolean {
  return data.includes('"usage":{') || data.includes('"usage": {');
}

/** A tap that never finds usage, for exchanges that are not billed (count_tokens). */
const NO_USAGE: UsageTap = { observe: () => undefined, result: () => null, outputTokens: () => Promise.resolve(0), behind: () => null };

/** The tap for a native stream on `endpoint` (whole replies are read once: see `reply-usage.ts`). */
export function usageTapFor(endpoint: EndpointId): UsageTap {
  switch (endpoint) {
    case 'chat':
      return new StreamUsageTap(endpoint, (_event, data, sofar) => chatUsageFromChunk(data) ?? (mentionsUsage(data) ? null : sofar));
    case 'responses':
      return new StreamUsageTap(endpoint, (event, data, sofar) => responsesUsageFromEvent(event, data) ?? (mentionsUsage(data) ? null : sofar));
    case 'messages':
      return new StreamUsageTap(endpoint, messagesUsageFromEvent);
    case 'count_tokens':
      return NO_USAGE;
  }
}
