/**
 * Slows down key guessing: each client address may present a wrong key only so often per minute;
 * past that its requests are refused before any key is looked up (RELIABILITY.md A7). The address is
 * Koa's `ctx.ip`: the socket's peer, since `X-Forwarded-For` is not trusted. Memory stays bounded:
 * entries expire with their window, and the oldest go first when the table is full.
 */
const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 100_000;

interface Window {
  readonly startedAt: number;
  failures: number;
}

export class AuthFailureLimiter {
  private readonly windows = new Map<string, Window>();

  /** @param limit wrong keys allowed per address per minute; 0 turns the limiter off. */
  constructor(private readonly limit: number) {}

  /** Seconds the address must wait, or 0 when it may present a key. */
  retryAfter(address: string, now: number): number {
    if (this.limit === 0) return 0;
    const window = this.current(address, now);
    if (window === null || window.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000));
  }

  /** Counts one wrong key from `address`. */
  fail(address: string, now: number): void {
    if (this.limit === 0) return;
    const window = this.current(address, now);
    if (window !== null) {
      window.failures += 1;
      return;
    }
    if (this.windows.size >= MAX_ADDRESSES) this.windows.delete(this.windows.keys().next().value as string);
    this.windows.set(address, { startedAt: now, failures: 1 });
  }

  private current(address: string, now: number): Window | null {
    const window = this.windows.get(address);
    if (window === undefined) return null;
    if (now - window.startedAt < WINDOW_MS) return window;
    this.windows.delete(address);
    return null;
  }
}
