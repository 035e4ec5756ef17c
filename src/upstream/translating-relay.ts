/**
 * Relays an upstream event stream through a translator: each upstream event becomes the client's
 * frames at once, with backpressure from the client pacing the upstream socket as in the native relay.
 * It is the one place that knows how a translated stream ended, so it reports the end and the usage.
 */
import { Readable } from 'node:stream';
import type { Interruptible } from '../kernel/active-streams';
import type { ExchangeEnd } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import type { SseEvent } from '../protocols/sse';
import { OutputTokenCount } from '../protocols/output-count';
import type { EndpointId, Usage } from '../protocols/types';
import type { StreamTranslation } from '../translators/types';
import type { FrameParser } from '../wire/types';
import { shutdownError } from './relay';
import { SourceGate } from './source-gate';

export interface TranslatingRelayOptions {
  readonly providerId: string;
  /** Chunks already read from the source (to judge its first event), translated before the rest. */
  readonly head?: readonly Buffer[];
  /** The upstream's protocol, to count the output as it passes, for billing when usage is missing. */
  readonly upstreamEndpoint: EndpointId;
  /** Splits the upstream's stream into events (SSE, or AWS event-stream for Bedrock). */
  readonly frames: FrameParser;
  /** Called exactly once: after the terminal event, on a failure, or when the client goes away. */
  readonly onEnd: (end: ExchangeEnd, usage: Usage | null, outputTokens: () => Promise<number>) => void;
}

export class TranslatingRelay extends Readable implements Interruptible {
  /** The output counted as it passes, in a bounded window: nothing read is kept. */
  private readonly output: OutputTokenCount;
  private readonly gate: SourceGate;
  private reported = false;
  /** Set once the source is left to drain on its own: it must not be destroyed then. */
  private released = false;

  constructor(
    private readonly source: Readable,
    private readonly translation: StreamTranslation,
    private readonly options: TranslatingRelayOptions,
  ) {
    super();
    this.output = new OutputTokenCount(options.upstreamEndpoint);
    this.gate = new SourceGate(source);
    for (const chunk of options.head ?? []) this.translate(chunk);
    // A reply whole in its first chunks has already ended and left the source to drain.
    if (this.released) return;
    // A reply whole in one read may have ended (its 'end' already fired) before its terminal event.
    if (source.readableEnded) {
      this.sourceEnded();
      return;
    }
    if (source.destroyed) {
      this.interrupt(source.errored ?? new Error('upstream closed the stream before its end'));
      return;
    }
    source.on('data', (chunk: Buffer) => this.translate(chunk));
    source.once('end', () => this.sourceEnded());
    source.once('error', (error: Error) => this.interrupt(error));
    // 'close' follows a normal end too: an Error (and its stack trace) only for a stream really cut.
    source.once('close', () => {
      if (!this.reported) this.interrupt(new Error('upstream closed the stream before its end'));
    });
    source.pause();
  }

  override _read(): void {
    this.gate.wanted();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // The client went away (or Koa tore the response down): stop the upstream at once.
    this.report({ kind: 'aborted' });
    if (!this.released) this.source.destroy();
    callback(error);
  }

  private translate(chunk: Buffer): void {
    let events: SseEvent[];
    try {
      events = this.options.frames.push(chunk);
    } catch (error) {
      // An event over the size cap: the upstream is broken, and the stream ends with an error event.
      return this.interrupt(error);
    }
    let frames = '';
    for (const event of events) {
      this.output.add(event.data);
      frames += this.translation.event(event);
      if (this.translation.ended) break;
    }
    if (frames !== '' && !this.push(frames)) this.gate.full();
    if (this.translation.ended) return this.close();
    this.gate.waitFor(this.output.behind());
  }

  /**
   * The translator has seen the end (terminal event or in-stream error): the client's stream ends, and
   * whatever the upstream still sends is drained unread, so its connection goes back to the pool
   * instead of being torn down (a new connection per request would cost more than the translation).
   */
  private close(): void {
    if (this.reported) return;
    const error = this.translation.upstreamError;
    this.push(null);
    this.report(error === null ? { kind: 'delivered' } : { kind: 'failed', error });
    this.released = true;
    this.source.removeAllListeners('data');
    this.source.on('error', () => undefined);
    this.source.resume();
  }

  private sourceEnded(): void {
    if (this.translation.ended) return this.close();
    this.interrupt(new Error('upstream ended the stream before its terminal event'));
  }

  shutdown(): void {
    if (this.reported) return;
    this.interrupt(shutdownError());
    if (!this.released) this.source.destroy();
  }

  /** The upstream broke off (or the gateway is stopping): end the client's stream with an error event, never a fake success. */
  private interrupt(cause: unknown): void {
    if (this.reported) return;
    const error =
      cause instanceof GatewayError
        ? cause
        : new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', `The upstream provider '${this.options.providerId}' broke off the stream.`, { cause });
    const frames = this.translation.interrupt(error);
    if (frames !== '') this.push(frames);
    this.push(null);
    this.report({ kind: 'failed', error });
  }

  private report(end: ExchangeEnd): void {
    if (this.reported) return;
    this.reported = true;
    const { output } = this;
    this.options.onEnd(end, this.translation.usage(), () => output.total());
  }
}
