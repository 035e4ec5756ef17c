/**
 * Relays an upstream event stream to the client as it arrives, through the route's codec (bytes as
 * they are, or each event translated): no buffering, and backpressure from the client (and from the
 * output count) paces the upstream socket. The relay is the one place that knows how the exchange
 * ended, so it reports the end and what the codec read: usage, output tokens, the reply's id.
 */
import { Readable } from 'node:stream';
import type { Interruptible } from '../kernel/active-streams';
import type { ExchangeEnd } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import type { Usage } from '../protocols/types';
import type { StreamCodec } from './attempt';
import { SourceGate } from './source-gate';

export interface RelayOptions {
  readonly providerId: string;
  /** Chunks already read from the source (to judge its first event), relayed before the rest. */
  readonly head: readonly Buffer[];
  /** Called exactly once: after the end, on a failure, or when the client goes away. */
  readonly onEnd: (end: ExchangeEnd, usage: Usage | null, outputTokens: () => Promise<number>, replyId: string | null) => void;
}

/** Why a stream still running at the shutdown deadline ends. */
function shutdownError(): GatewayError {
  return new GatewayError('TOLLGATE_ERR_SHUTTING_DOWN', 'The gateway is shutting down and ended the stream; retry the request.');
}

export class Relay extends Readable implements Interruptible {
  private readonly gate: SourceGate;
  private reported = false;
  /** Set once the source is left to drain on its own: it must not be destroyed then. */
  private released = false;

  constructor(
    private readonly source: Readable,
    private readonly codec: StreamCodec,
    private readonly options: RelayOptions,
  ) {
    super();
    this.gate = new SourceGate(source);
    for (const chunk of options.head) this.relay(chunk);
    // The answer was whole in its first chunks: it has ended, or failed.
    if (this.reported) return;
    // A reply whole in one read has already ended while its first event was judged: its 'end' fired
    // before anyone here listened, so there is nothing to wait for.
    if (source.readableEnded) {
      this.sourceEnded();
      return;
    }
    if (source.destroyed) {
      this.fail(source.errored ?? new Error('upstream closed the stream before its end'));
      return;
    }
    source.on('data', (chunk: Buffer) => this.relay(chunk));
    source.once('end', () => this.sourceEnded());
    source.once('error', (error: Error) => this.fail(error));
    // 'close' follows a normal end too: an Error (and its stack trace) only for a stream really cut.
    source.once('close', () => {
      if (!this.reported) this.fail(new Error('upstream closed the stream before its end'));
    });
    source.pause();
  }

  override _read(): void {
    this.gate.wanted();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // The client went away (or the response was torn down): stop the upstream at once.
    this.report({ kind: 'aborted' });
    if (!this.released) this.source.destroy();
    callback(error);
  }

  shutdown(): void {
    if (this.reported) return;
    this.fail(shutdownError());
    if (!this.released) this.source.destroy();
  }

  /** Sends one upstream chunk on, as the codec makes it; then reads on when the client and the count allow. */
  private relay(chunk: Buffer): void {
    let out: Buffer | string | readonly Buffer[];
    try {
      out = this.codec.push(chunk);
    } catch (error) {
      // An event over the size cap: the upstream is broken, and the stream ends with an error event.
      return this.fail(error);
    }
    let room = true;
    for (const piece of typeof out === 'string' || Buffer.isBuffer(out) ? [out] : out) if (piece.length > 0) room = this.push(piece) && room;
    if (!room) this.gate.full();
    if (this.codec.complete) return this.complete();
    this.gate.waitFor(this.codec.read.behind());
  }

  private sourceEnded(): void {
    if (this.codec.complete) return this.complete();
    let rest: Buffer | string;
    try {
      rest = this.codec.flush();
    } catch (error) {
      return this.fail(error);
    }
    if (rest.length > 0) this.push(rest);
    this.push(null);
    this.report({ kind: 'delivered' });
  }

  /**
   * The answer is complete before the upstream's stream ended: the client's stream ends, and whatever
   * the upstream still sends is drained unread, so its connection goes back to the pool instead of
   * being torn down.
   */
  private complete(): void {
    if (this.reported) return;
    const error = this.codec.upstreamError;
    this.push(null);
    this.report(error === null ? { kind: 'delivered' } : { kind: 'failed', error });
    this.released = true;
    this.source.removeAllListeners('data');
    this.source.on('error', () => undefined);
    this.source.resume();
  }

  /** The upstream broke off (or the gateway is stopping): end the client's stream with an error event, never a fake success. */
  private fail(cause: unknown): void {
    if (this.reported) return;
    const error =
      cause instanceof GatewayError
        ? cause
        : new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', `The upstream provider '${this.options.providerId}' broke off the stream.`, { cause });
    const frames = this.codec.interrupt(error);
    if (frames !== '') this.push(frames);
    this.push(null);
    this.report({ kind: 'failed', error });
  }

  private report(end: ExchangeEnd): void {
    if (this.reported) return;
    this.reported = true;
    const { read } = this.codec;
    const settle = () => this.options.onEnd(end, read.result(), () => read.outputTokens(), read.replyId?.() ?? null);
    // A large event still being read in the tokenizer's thread may carry the usage: the report waits for it.
    const reading = read.settled?.() ?? null;
    if (reading === null) settle();
    else void reading.then(settle);
  }
}
