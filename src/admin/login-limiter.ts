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

  /** Password checks under way, per subject: each counts against the limit until it ends. */
  private readonly checking = new Map<string, number>();

  /** Seconds to wait before `subjects` may try again; 0 when they may now. */
  retryAfter(subjects: readonly string[], now: number): number {
    if (this.limit === 0) return 0;
    return Math.max(0, ...subjects.map((subject) => this.waitOf(subject, now)));
  }

  /**
   * A password check starts. Until `end`, it counts as a failure would: a check takes ~0.3 s, and
   * guesses sent all at once must not all get past the limit before the first of them has failed.
   */
  begin(subjects: readonly string[]): void {
    if (this.limit === 0) return;
    for (const subject of subjects) this.checking.set(subject, (this.checking.get(subject) ?? 0) + 1);
  }

  /** The check `begin` announced is over (call `fail` first when the password was wrong). */
  end(subjects: readonly string[]): void {
    for (const subject of subjects) {
      const left = (this.checking.get(subject) ?? 0) - 1;
      if (left > 0) this.checking.set(subject, left);
      else this.checking.delete(subject);
    }
  }

  fail(subjects: readonly string[], now: number): void {
    if (this.limit === 0) return;
    for (const subject of subjects) this.windows.add(subject, now);
  }

  /** A correct password clears the name's count (not the address's: it may be guessing other names). */
  succeed(subject: string): void {
    this.windows.clear(subject);
  }

  private waitOf(subject: string, now: number): number {
    const checking = this.checking.get(subject) ?? 0;
    const wait = this.windows.retryAfter(subject, Math.max(1, this.limit - checking), now);
    if (wait > 0) return wait;
    // As many checks under way as the limit allows, and no failure yet: retry once they are done.
    return checking >= this.limit ? 1 : 0;
  }
}
