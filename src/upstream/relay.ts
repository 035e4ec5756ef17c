/**
 * Relays an upstream event stream to the client chunk by chunk, as it arrives: no buffering, backpressure
 * from the client paces the upstream socket, and a side tap reads usage on the way. The relay is the
 * one place that knows how the exchange ended, so it resolves the exchange's `finished` promise.
 */
import { Readable } from 'node:stream';
import type { ExchangeEnd } from '../kernel/context';
import { sseFrame } from '../protocols/sse';
import type { UsageTap } from '../protocols/types';
import type { FrameParser } from '../wire/types';

export interface RelayOptions {
  /** Chunks already read from `source` (to judge its first event), relayed before the rest. */
  readonly head?: readonly Buffer[];
  readonly tap: UsageTap;
  /** Called exactly once: after the last byte, on an upstream failure, or when the client goes away. */
  readonly onEnd: (end: ExchangeEnd) => void;
  /** The frame that tells the client the stream broke; nothing follows it. */
  readonly failureFrame: (error: unknown) => string;
  /**
   * For a provider whose stream is not SSE (AWS event-stream): its parser, whose events are re-framed
   * as the SSE the client expects. Null: the bytes pass through as they are.
   */
  readonly reframe: FrameParser | null;
}

export class Relay extends Readable {
  private ended = false;

  constructor(
    private readonly source: Readable,
    private readonly options: RelayOptions,
  ) {
    super();
    for (const chunk of options.head ?? []) this.relay(chunk);
    source.on('data', (chunk: Buffer) => {
      if (!this.relay(chunk)) source.pause();
    });
    source.once('end', () => {
      this.push(null);
      this.finish({ kind: 'delivered' });
    });
    source.once('error', (error: Error) => this.fail(error));
    source.once('close', () => {
      if (!this.ended) this.fail(new Error('upstream closed the stream before its end'));
    });
    source.pause();
  }

  override _read(): void {
    this.source.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // The client went away (or Koa tore the response down): stop the upstream at once.
    this.finish({ kind: 'aborted' });
    this.source.destroy();
    callback(error);
  }

  /** Sends one upstream chunk on (re-framed when needed); false when the client wants no more for now. */
  private relay(chunk: Buffer): boolean {
    const { reframe, tap } = this.options;
    let out = chunk;
    if (reframe !== null) {
      let frames = '';
      for (const event of reframe.push(chunk)) frames += sseFrame(event.event, event.data);
      if (frames === '') return true;
      out = Buffer.from(frames);
    }
    tap.observe(out);
    return this.push(out);
  }

  private fail(error: unknown): void {
    if (this.ended) return;
    this.push(this.options.failureFrame(error));
    this.push(null);
    this.finish({ kind: 'failed', error });
  }

  private finish(end: ExchangeEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.options.onEnd(end);
  }
}
