/**
 * Relays an upstream event stream to the client chunk by chunk, as it arrives: no buffering, backpressure
 * from the client paces the upstream socket, and a side tap reads usage on the way. The relay is the
 * one place that knows how the exchange ended, so it resolves the exchange's `finished` promise.
 */
import { Readable } from 'node:stream';
import type { ExchangeEnd } from '../kernel/context';
import type { Interruptible } from '../kernel/active-streams';
import { GatewayError } from '../kernel/errors';
import { sseFrame } from '../protocols/sse';
import type { UsageTap } from '../protocols/types';
import type { FrameParser } from '../wire/types';
import { SourceGate } from './source-gate';

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
  /** Rewrites what the client receives (the tap still sees the stream as it came); absent: bytes pass as they are. */
  readonly filter?: StreamFilter;
}

/** A rewrite of the relayed bytes that may hold back an unfinished frame until its end arrives. */
export interface StreamFilter {
  push(chunk: Buffer): Buffer;
  /** The bytes held back when the stream ends. */
  end(): Buffer;
}

/** Why a stream still running at the shutdown deadline ends. */
export function shutdownError(): GatewayError {
  return new GatewayError('TOLLGATE_ERR_SHUTTING_DOWN', 'The gateway is shutting down and ended the stream; retry the request.');
}

export class Relay extends Readable implements Interruptible {
  private ended = false;
  private readonly gate: SourceGate;

  constructor(
    private readonly source: Readable,
    private readonly options: RelayOptions,
  ) {
    super();
    this.gate = new SourceGate(source);
    for (const chunk of options.head ?? []) this.relay(chunk);
    // A reply whole in one read has already ended while its first event was judged: its 'end' fired
    // before anyone here listened, so there is nothing to wait for.
    if (source.readableEnded) {
      this.end();
      return;
    }
    if (source.destroyed) {
      this.fail(source.errored ?? new Error('upstream closed the stream before its end'));
      return;
    }
    source.on('data', (chunk: Buffer) => {
      if (!this.relay(chunk)) this.gate.full();
      this.gate.waitFor(options.tap.behind());
    });
    source.once('end', () => this.end());
    source.once('error', (error: Error) => this.fail(error));
    source.once('close', () => {
      if (!this.ended) this.fail(new Error('upstream closed the stream before its end'));
    });
    source.pause();
  }

  /** Sends one upstream chunk on (re-framed, then filtered, when needed); false when the client wants no more for now. */
  private relay(chunk: Buffer): boolean {
    const { reframe, tap, filter } = this.options;
    let out = chunk;
    if (reframe !== null) {
      let frames = '';
      for (const event of reframe.push(chunk)) frames += sseFrame(event.event, event.data);
      if (frames === '') return true;
      out = Buffer.from(frames);
    }
    tap.observe(out);
    const sent = filter === undefined ? out : filter.push(out);
    return sent.length === 0 || this.push(sent);
  }

  /** The upstream's stream ended: what the filter held back goes out, then the end. */
  private end(): void {
    const rest = this.options.filter?.end();
    if (rest !== undefined && rest.length > 0) this.push(rest);
    this.push(null);
    this.finish({ kind: 'delivered' });
  }

  override _read(): void {
    this.gate.wanted();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // The client went away (or Koa tore the response down): stop the upstream at once.
    this.finish({ kind: 'aborted' });
    this.source.destroy();
    callback(error);
  }

  shutdown(): void {
    if (this.ended) return;
    this.fail(shutdownError());
    this.source.destroy();
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
