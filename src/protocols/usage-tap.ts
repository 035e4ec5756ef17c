/**
 * Side taps that read usage from the bytes a native stream relays, without delaying or changing them:
 * the stream is split into SSE events as it passes. (A whole reply is parsed once: `reply-usage.ts`.)
 * An event with a data line of `LARGE_LINE_BYTES` or more (an image) is never decoded or parsed on the
 * event loop: its bytes go to the tokenizer's thread, which parses it, counts its output and sends back
 * its skeleton (`large-json.ts`), which is folded like any other event, in stream order: the events
 * after it wait for it, and the relay reads no further until it is read, so one is held at a time.
 */
import { readLargeAsync } from '../billing/tokenizer';
import { messagesUsageFromEvent } from './anthropic-messages/usage';
import { mentionsUsage } from './large-json';
import { chatUsageFromChunk } from './openai-chat/usage';
import { responseIdFromEvent, responsesUsageFromEvent } from './openai-responses/usage';
import { responsesImageCall } from './openai-responses/image-calls';
import { imagesUsageFromEvent } from './openai-images/usage';
import { OutputTokenCount } from './output-count';
import { SseParser } from './sse';
import type { EndpointId, Usage, UsageCounts, UsageTap } from './types';

/** Folds one event into the usage so far: the new counts, `sofar` when it says nothing, null when unreadable. */
type Fold = (event: string | null, data: string, sofar: UsageCounts | null) => UsageCounts | null;

/** A data line this long is handed on as bytes rather than decoded (as the output count's large events). */
const LARGE_LINE_BYTES = 256 * 1024;

class StreamUsageTap implements UsageTap {
  private readonly parser: SseParser;
  /** Events still to fold behind a large event being read in the tokenizer's thread; null when none waits. */
  private queue: Promise<void> | null = null;
  private counts: UsageCounts | null = null;
  /** A usage report that could not be read spoils the stream's usage: billing then counts for itself. */
  private unreadable = false;
  private id: string | null = null;
  /** The output counted as it passes, in a bounded window: nothing relayed is kept. */
  private readonly output: OutputTokenCount;
  constructor(
    private readonly endpoint: EndpointId,
    private readonly folder: Fold,
    maxEventBytes: number | undefined,
  ) {
    this.output = new OutputTokenCount(endpoint);
    this.parser = new SseParser(maxEventBytes, LARGE_LINE_BYTES);
  }

  /** Throws `SseEventTooLarge` for an event over the cap: the relay then ends the stream with an error event. */
  observe(chunk: Buffer): void {
    const events = this.parser.push(chunk);
    for (const { event, data, raw } of events) {
      if (raw !== undefined) {
        this.readLarge(event, raw);
        continue;
      }
      this.output.add(data);
      if (this.queue === null) this.fold(event, data);
      else this.later(() => this.fold(event, data));
    }
  }

  /** One large event: read in the tokenizer's thread, its output counted there, its skeleton folded in turn. */
  private readLarge(event: string | null, raw: readonly Buffer[]): void {
    const read = readLargeAsync(raw, this.endpoint, 'event', true);
    this.output.addCounted(read.tokens);
    const facts = read.facts.catch(
      // The count reports the failure (billing then refuses to guess); usage cannot be read from this event.
      () => ({ skeleton: null, mentionsUsage: true }),
    );
    this.later(async () => {
      const { skeleton, mentionsUsage } = await facts;
      // Not JSON: a usage it mentions cannot be read, as for a small event.
      if (skeleton === null) this.unreadable ||= mentionsUsage;
      else this.fold(event, skeleton, mentionsUsage);
    });
  }

  /** Runs `step` after the events queued before it. */
  private later(step: () => void | Promise<void>): void {
    // A fold does not throw (unreadable counts read as null); if one did, the usage is spoilt, not the stream.
    const queued = (this.queue ?? Promise.resolve()).then(step).catch(() => void (this.unreadable = true));
    this.queue = queued;
    void queued.then(() => {
      if (this.queue === queued) this.queue = null;
    });
  }

  /**
   * Folds one event (its data, or a large event's skeleton) into the usage and the reply's id.
   * `carriesUsage`: whether the event held a usage object, when the data given is not the event's own.
   */
  private fold(event: string | null, data: string, carriesUsage?: boolean): void {
    if (this.endpoint === 'responses') this.id = responseIdFromEvent(event, data) ?? this.id;
    if (this.unreadable) return;
    const before = this.counts;
    const after = this.folder(event, data, before);
    if (after === null && (carriesUsage ?? mentionsUsage(data))) this.unreadable = true;
    this.counts = after ?? before;
  }

  /** Resolves once every event seen has been folded (a large one may still be read); null when all are. */
  settled(): Promise<void> | null {
    return this.queue;
  }

  outputTokens(): Promise<number> {
    return this.output.total();
  }

  behind(): Promise<void> | null {
    return this.queue ?? this.output.behind();
  }

  result(): Usage | null {
    if (this.unreadable || this.counts === null) return null;
    // Counts the upstream never reported (image calls seen) are partial whatever the end.
    // Object.assign, not a spread followed by `source`: that is copied on V8's slow path (docs/benchmarks.md).
    return Object.assign({}, this.counts, { source: this.counts.unreported === true ? ('partial' as const) : ('upstream' as const) });
  }

  replyId(): string | null {
    return this.id;
  }
}

/** A tap that never finds usage, for exchanges that are not billed (count_tokens). */
const NO_USAGE: UsageTap = { observe: () => undefined, result: () => null, outputTokens: () => Promise.resolve(0), behind: () => null };

/**
 * The tap for a native stream on `endpoint` (whole replies are read once: see `reply-usage.ts`);
 * `maxEventBytes` bounds one event (server.max_reply_bytes; the parser's default when not given).
 */
export function usageTapFor(endpoint: EndpointId, maxEventBytes?: number): UsageTap {
  switch (endpoint) {
    case 'chat':
      return new StreamUsageTap(endpoint, (_event, data, sofar) => chatUsageFromChunk(data) ?? (mentionsUsage(data) ? null : sofar), maxEventBytes);
    case 'responses':
      return new StreamUsageTap(
        endpoint,
        (event, data, sofar) => responsesUsageFromEvent(event, data) ?? responsesImageCall(event, data, sofar) ?? (mentionsUsage(data) ? null : sofar),
        maxEventBytes,
      );
    case 'messages':
      return new StreamUsageTap(endpoint, messagesUsageFromEvent, maxEventBytes);
    case 'images':
      // Each image_generation.completed event is one image and its usage; a large one is read off the loop.
      return new StreamUsageTap(endpoint, imagesUsageFromEvent, maxEventBytes);
    case 'count_tokens':
      return NO_USAGE;
  }
}
