/**
 * The paid requests billing has admitted and not yet settled, and the settlements still running:
 * what the backlog bound counts before a charge reaches the writer's queue, and what a close waits
 * for, so requests cut off by a shutdown still reach the writer (and the book) before either closes.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export class InFlight {
  /** Admitted (held) and not yet settled: their charges will join the writer's queue. */
  private admittedCount = 0;
  /** Set when billing closes: no new hold, and the close waits for the admitted ones to settle. */
  private closingNow = false;
  private lastSettled: (() => void) | null = null;
  private readonly settling = new Set<Promise<void>>();

  get admitted(): number {
    return this.admittedCount;
  }

  get closing(): boolean {
    return this.closingNow;
  }

  admit(): void {
    this.admittedCount += 1;
  }

  /** One admitted request is settled (or its hold failed); `paid` false: it was never admitted. */
  done(paid: boolean): void {
    if (paid) this.admittedCount -= 1;
    if (this.admittedCount === 0) this.lastSettled?.();
  }

  track(work: Promise<unknown>): void {
    const done = work.then(() => undefined);
    this.settling.add(done);
    void done.finally(() => this.settling.delete(done));
  }

  /** Refuses new holds, then waits for the admitted to settle (at most `maxWaitMs`) and every settlement tracked. */
  async drain(maxWaitMs: number): Promise<void> {
    this.closingNow = true;
    if (this.admittedCount > 0) await Promise.race([new Promise<void>((resolve) => (this.lastSettled = resolve)), sleep(maxWaitMs, undefined, { ref: false })]);
    await Promise.all(this.settling);
  }
}
