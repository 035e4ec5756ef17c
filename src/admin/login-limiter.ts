/**
 * Slows down password guessing: wrong passwords are counted per account (the one the login names,
 * whether by name or e-mail, whatever the case) and per client address in 15-minute windows; past
 * the limit, logins for that account or from that address are refused (429) until the window ends.
 * Counting per account stops a botnet spreading guesses over addresses; per address stops one client
 * trying many names. A correct password clears nothing, and successes are counted too, in their own
 * windows with a limit three times as high: each costs a password hash, so a stream of correct logins
 * must not be a free way to load the process. In process: each instance counts its own.
 */
import { FailureWindows } from '../auth/failure-windows';

/** Successful logins allowed per account and per address per window, as a multiple of the failure limit. */
const SUCCESSES_PER_FAILURE = 3;

export class LoginLimiter {
  private readonly failures = new FailureWindows(15 * 60_000);
  private readonly successes = new FailureWindows(15 * 60_000);

  /** @param limit wrong passwords per account and per address per window; 0 turns the limiter off. */
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

  /** The check `begin` announced is over (call `fail` or `succeed` first). */
  end(subjects: readonly string[]): void {
    for (const subject of subjects) {
      const left = (this.checking.get(subject) ?? 0) - 1;
      if (left > 0) this.checking.set(subject, left);
      else this.checking.delete(subject);
    }
  }

  fail(subjects: readonly string[], now: number): void {
    if (this.limit === 0) return;
    for (const subject of subjects) this.failures.add(subject, now);
  }

  /** A correct password: counted in the success windows; the failures stay as they are. */
  succeed(subjects: readonly string[], now: number): void {
    if (this.limit === 0) return;
    for (const subject of subjects) this.successes.add(subject, now);
  }

  private waitOf(subject: string, now: number): number {
    const checking = this.checking.get(subject) ?? 0;
    const wait = Math.max(
      this.failures.retryAfter(subject, Math.max(1, this.limit - checking), now),
      this.successes.retryAfter(subject, this.limit * SUCCESSES_PER_FAILURE, now),
    );
    if (wait > 0) return wait;
    // As many checks under way as the limit allows, and no failure yet: retry once they are done.
    return checking >= this.limit ? 1 : 0;
  }
}
