/**
 * The vocabulary of one upstream attempt. An attempt either produces a `Commit` (an answer ready to
 * reach the client, not yet sent) or throws an `AttemptFailure` saying what went wrong in the failover
 * policy's words, and how the client would be answered if this failure were the last word. Nothing
 * reaches the client before `commit()`: that is what makes retrying safe.
 */
import type { Readable } from 'node:stream';
import type { GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import type { Usage } from '../protocols/types';
import type { ExchangeEnd } from '../kernel/context';

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

export class AttemptFailure extends Error {
  override readonly name = 'AttemptFailure';

  constructor(
    readonly kind: FailureKind,
    /** The upstream's status for `status` failures, else null. */
    readonly status: number | null,
    /** How the client is answered if nothing better comes: a relayed upstream error, or a GatewayError. */
    private readonly answer: GatewayError | { status: number; headers: Record<string, string>; body: Buffer },
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
