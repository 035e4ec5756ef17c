/**
 * The vocabulary of one upstream attempt. An attempt either produces a `Commit` (an answer ready to
 * reach the client, not yet sent) or throws an `AttemptFailure` saying what went wrong in the failover
 * policy's words, and how the client would be answered if this failure were the last word. Nothing
 * reaches the client before `commit()`: that is what makes retrying safe.
 */
import type { Readable } from 'node:stream';
import type { ExchangeEnd, GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import type { Usage, UsageTap } from '../protocols/types';
import type { Target } from '../routing/resolve';
import type { ErrorReply, UpstreamCall } from '../wire/types';
import type { UpstreamResponse } from './types';

/** What failed, in the failover policy's words (`retry_on`). */
export type FailureKind = 'connect_error' | 'reset' | 'timeout' | 'status' | 'invalid' | 'aborted';

/**
 * Reports how the committed exchange ended; called exactly once, later for streams. `replyId` is the
 * id of the reply the client got where a later request may reference it (a Responses `resp_…`).
 */
export type ReportEnd = (
  end: ExchangeEnd,
  usage: Usage | null,
  status: number,
  outputTokens: () => Promise<number>,
  replyId?: string | null,
) => void;

/** An answer decided but not yet sent: `commit()` sets the Koa response and wires the end report. */
export interface Commit {
  /** The upstream's own id for this answer (`x-request-id` or `request-id`), logged beside ours. */
  readonly upstreamRequestId: string | null;
  commit(ctx: GatewayContext, report: ReportEnd): void;
}

/**
 * How one route carries a request and its answer between the client's protocol and the provider's:
 * the passthrough for a route that speaks the client's protocol (its bytes go as they are, the model
 * renamed), a translator otherwise. The attempt and the relay are the same for both.
 */
export interface RouteTranslator {
  /** One attempt at `target`, its request written; throws the 400 naming what the route's protocol cannot express. */
  begin(ctx: GatewayContext, target: Target): AttemptLeg;
}

/** One attempt's request, and how its answer reaches the client. */
export interface AttemptLeg {
  readonly call: UpstreamCall;
  readonly headers: Record<string, string>;
  /** The `header` labels of the client headers a native request left behind (none on a translated one, which takes no client header). */
  readonly droppedHeaders?: readonly string[];
  readonly body: Buffer;
  /** An upstream error about the request (≥ 400, not 401/403), in its family's shape, as the client would get it. */
  error(reply: ErrorReply, received: Buffer, headers: UpstreamResponse['headers']): FailureAnswer;
  /**
   * A whole reply, read: the answer to commit, or an `AttemptFailure` when it cannot be read. A large
   * reply may be read off the event loop: the answer then comes as a promise.
   */
  reply(bytes: Buffer, response: UpstreamResponse): PlainAnswer | Promise<PlainAnswer>;
  /** The status and headers of a streamed answer. */
  streamHead(response: UpstreamResponse): { readonly status: number; readonly headers: Record<string, string> };
  stream(): StreamCodec;
}

export interface PlainAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  readonly usage: Usage | null;
  readonly outputTokens: () => Promise<number>;
  readonly replyId: string | null;
}

/** What the relay does with a stream's bytes on their way to the client, and what it reads on the way. */
export interface StreamCodec {
  /**
   * The client's bytes for one upstream chunk (empty: none yet), or the pieces they are made of (a large
   * event relayed without copying it into one buffer first). Throwing breaks the stream off.
   */
  push(chunk: Buffer): Buffer | string | readonly Buffer[];
  /** True once the answer is complete before the upstream's stream ends (a translator saw its terminal event). */
  readonly complete: boolean;
  /** The upstream's stream ended: the last bytes held back. Throws when it ended too early. */
  flush(): Buffer | string;
  /** The frames that end the client's stream with `error`; nothing follows them. */
  interrupt(error: GatewayError): string;
  /** An error the upstream reported inside its stream, which ended it; null when none. */
  readonly upstreamError: GatewayError | null;
  /** The usage, output count and reply id read so far; `behind()` paces the reading. */
  readonly read: Omit<UsageTap, 'observe'>;
}

/** How the client is answered by a failure: an upstream error relayed as it came, or a GatewayError. */
export type FailureAnswer = GatewayError | { status: number; headers: Record<string, string>; body: Buffer };

export class AttemptFailure extends Error {
  override readonly name = 'AttemptFailure';

  constructor(
    readonly kind: FailureKind,
    /** The upstream's status for `status` failures, else null. */
    readonly status: number | null,
    /** How the client is answered if nothing better comes: a relayed upstream error, or a GatewayError. */
    private readonly answer: FailureAnswer,
    /** The provider's own retry-after, in ms, when it sent one. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(answer instanceof GatewayError ? answer.message : `upstream answered ${answer.status}`);
  }

  /** Whether the failure says something about the provider's health (client errors and aborts do not). */
  get countsAgainstProvider(): boolean {
    if (this.kind === 'aborted') return false;
    if (this.kind !== 'status' || this.status === null) return true;
    return this.status === 408 || this.status === 429 || this.status >= 500;
  }

  /** The status the client would get. */
  get clientStatus(): number {
    return this.answer instanceof GatewayError ? this.answer.status : this.answer.status;
  }

  /** Answers the client with this failure: relays the upstream's error, or throws for the kernel to render. */
  respond(ctx: GatewayContext): void {
    if (this.answer instanceof GatewayError) throw this.answer;
    ctx.status = this.answer.status;
    ctx.set(this.answer.headers);
    ctx.body = this.answer.body;
  }
}

/** A reply the client could not read: a 502, and another route may do better. */
export function invalidReply(target: Target, why: string): AttemptFailure {
  return new AttemptFailure(
    'invalid',
    null,
    new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', `The upstream provider '${target.provider.id}' sent an invalid reply.`, {
      cause: new Error(why),
    }),
  );
}

/** An upstream `retry-after` (seconds or HTTP date) or `retry-after-ms`, in ms; null when absent or unreadable. */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>): number | null {
  const ms = headers['retry-after-ms'];
  if (typeof ms === 'string' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const value = headers['retry-after'];
  if (typeof value !== 'string') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

/** Discards an unread body so its connection goes back to the pool (or is closed). */
export function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.resume();
}
