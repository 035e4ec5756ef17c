/**
 * Relays an upstream event stream through a translator: each upstream event becomes the client's
 * frames at once, with backpressure from the client pacing the upstream socket as in the native relay.
 * It is the one place that knows how a translated stream ended, so it reports the end and the usage.
 */
import { Readable } from 'node:stream';
import type { ExchangeEnd } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import { sseFrame } from '../protocols/sse';
import { outputTextOf } from '../protocols/output-text';
import type { EndpointId, Usage } from '../protocols/types';
import type { StreamTranslation } from '../translators/types';
import type { FrameParser } from '../wire/types';

export interface TranslatingRelayOptions {
  readonly providerId: string;
  /** Chunks already read from the source (to judge its first event), translated before the rest. */
  readonly head?: readonly Buffer[];
  /** The upstream's protocol, to read the output text back from its bytes when billing needs it. */
  readonly upstreamEndpoint: EndpointId;
  /** The upstream protocol's frame parser (SSE or AWS event-stream), fresh for this stream. */
  readonly frames: FrameParser;
  /** Whether the upstream's frames are SSE; if not, the events are kept as SSE for reading the output back. */
  readonly sse: boolean;
  /** Called exactly once: after the terminal event, on a failure, or when the client goes away. */
  readonly onEnd: (end: ExchangeEnd, usage: Usage | null, outputText: () => string) => void;
}

export class TranslatingRelay extends Readable {
  /** References to the upstream's chunks, read back only if the output must be counted. */
  private readonly chunks: Buffer[] = [];
  private reported = false;
  /** Set once the source is left to drain on its own: it must not be destroyed then. */
  private released = false;

  constructor(
    private readonly source: Readable,
    private readonly translation: StreamTranslation,
    private readonly options: TranslatingRelayOptions,
  ) {
    super();
    for (const chunk of options.head ?? []) this.translate(chunk);
    // A reply whole in its first chunks has already ended and left the source to drain.
    if (this.released) return;
    source.on('data', (chunk: Buffer) => this.translate(chunk));
    source.once('end', () => this.sourceEnded());
    source.once('error', (error: Error) => this.interrupt(error));
    source.once('close', () => this.interrupt(new Error('upstream closed the stream before its end')));
    source.pause();
  }

  override _read(): void {
    this.source.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // The client went away (or Koa tore the response down): stop the upstream at once.
    this.report({ kind: 'aborted' });
    if (!this.released) this.source.destroy();
    callback(error);
  }

  private translate(chunk: Buffer): void {
    const events = this.options.frames.push(chunk);
    if (this.options.sse) this.chunks.push(chunk);
    else for (const event of events) this.chunks.push(Buffer.from(sseFrame(event.event, event.data)));
    let frames = '';
    for (const event of events) {
      frames += this.translation.event(event);
      if (this.translation.ended) break;
    }
    if (frames !== '' && !this.push(frames)) this.source.pause();
    if (this.translation.ended) this.close();
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

  /** The upstream broke off: end the client's stream with an error event, never a fake success. */
  private interrupt(cause: unknown): void {
    if (this.reported) return;
    const error = new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', `The upstream provider '${this.options.providerId}' broke off the stream.`, { cause });
    const frames = this.translation.interrupt(error);
    if (frames !== '') this.push(frames);
    this.push(null);
    this.report({ kind: 'failed', error });
  }

  private report(end: ExchangeEnd): void {
    if (this.reported) return;
    this.reported = true;
    const { chunks } = this;
    this.options.onEnd(end, this.translation.usage(), () => outputTextOf(this.options.upstreamEndpoint, true, chunks));
  }
}
