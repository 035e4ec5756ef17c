/**
 * Slows down key guessing: each client address may present a wrong key only so often per minute;
 * past that its requests are refused before any key is looked up (docs/faults.md#a7). The address is
 * Koa's `ctx.ip`: the socket's peer, unless `server.trust_proxy` lets the proxy's header name it.
 */
import { FailureWindows } from './failure-windows';

export class AuthFailureLimiter {
  private readonly windows = new FailureWindows(60_000);

  /** @param limit wrong keys allowed per address per minute; 0 turns the limiter off. */
  constructor(private readonly limit: number) {}

  /** Seconds the address must wait, or 0 when it may present a key. */
  retryAfter(address: string, now: number): number {
    return this.limit === 0 ? 0 : this.windows.retryAfter(address, this.limit, now);
  }

  /** Counts one wrong key from `address`. */
  fail(address: string, now: number): void {
    if (this.limit !== 0) this.windows.add(address, now);
  }
}
