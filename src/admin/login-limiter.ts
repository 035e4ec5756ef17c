/**
 * Slows down password guessing: wrong passwords are counted per account name and per client address
 * in 15-minute windows; past the limit, logins for that name or from that address are refused (429)
 * until the window ends. Counting per name stops a botnet spreading guesses over addresses; per
 * address stops one client trying many names. In process: each instance counts its own.
 */
const WINDOW_MS = 15 * 60_000;
const MAX_ENTRIES = 100_000;

interface Window {
  readonly startedAt: number;
  failures: number;
}

export class LoginLimiter {
  private readonly windows = new Map<string, Window>();

  /** @param limit wrong passwords per name and per address per window; 0 turns the limiter off. */
  constructor(private readonly limit: number) {}

  /** Seconds to wait before `subjects` may try again; 0 when they may now. */
  retryAfter(subjects: readonly string[], now: number): number {
    if (this.limit === 0) return 0;
    let wait = 0;
    for (const subject of subjects) {
      const window = this.current(subject, now);
      if (window !== null && window.failures >= this.limit) wait = Math.max(wait, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000));
    }
    return wait;
  }

  fail(subjects: readonly string[], now: number): void {
    if (this.limit === 0) return;
    for (const subject of subjects) {
      const window = this.current(subject, now);
      if (window !== null) {
        window.failures += 1;
        continue;
      }
      if (this.windows.size >= MAX_ENTRIES) this.windows.delete(this.windows.keys().next().value as string);
      this.windows.set(subject, { startedAt: now, failures: 1 });
    }
  }

  /** A correct password clears the name's count (not the address's: it may be guessing other names). */
  succeed(subject: string): void {
    this.windows.delete(subject);
  }

  private current(subject: string, now: number): Window | null {
    const window = this.windows.get(subject);
    if (window === undefined) return null;
    if (now - window.startedAt < WINDOW_MS) return window;
    this.windows.delete(subject);
    return null;
  }
}
