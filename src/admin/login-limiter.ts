/**
 * Slows down password guessing: wrong passwords are counted per account name and per client address
 * in 15-minute windows; past the limit, logins for that name or from that address are refused (429)
 * until the window ends. Counting per name stops a botnet spreading guesses over addresses; per
 * address stops one client trying many names. In process: each instance counts its own.
 */
import { FailureWindows } from '../auth/failure-windows';

export class LoginLimiter {
  private readonly windows = new FailureWindows(15 * 60_000);

  /** @param limit wrong passwords per name and per address per window; 0 turns the limiter off. */
  constructor(private readonly limit: number) {}

  /** Seconds to wait before `subjects` may try again; 0 when they may now. */
  retryAfter(subjects: readonly string[], now: number): number {
    if (this.limit === 0) return 0;
    return Math.max(0, ...subjects.map((subject) => this.windows.retryAfter(subject, this.limit, now)));
  }

  fail(subjects: readonly string[], now: number): void {
    if (this.limit === 0) return;
    for (const subject of subjects) this.windows.add(subject, now);
  }

  /** A correct password clears the name's count (not the address's: it may be guessing other names). */
  succeed(subject: string): void {
    this.windows.clear(subject);
  }
}
