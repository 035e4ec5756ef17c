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
  /** Settlements tracked and still running, and who waits for the last of them (a close). */
  private settlingCount = 0;
  private readonly allSettled: (() => void)[] = [];
  /** Bound once: tracking a settlement makes one promise and no closure (docs/benchmarks.md, issue 47's cuts). */
  private readonly oneSettled = (): void => {
    this.settlingCount -= 1;
    if (this.settlingCount === 0) for (const resolve of this.allSettled.splice(0)) resolve();
  };

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

  /** A settlement close waits for; its failure (settle never throws) counts as its end. */
  track(work: Promise<unknown>): void {
    this.settlingCount += 1;
    void work.then(this.oneSettled, this.oneSettled);
  }

  /** Refuses new holds, then waits for the admitted to settle (at most `maxWaitMs`) and every settlement tracked. */
  async drain(maxWaitMs: number): Promise<void> {
    this.closingNow = true;
    if (this.admittedCount > 0) await Promise.race([new Promise<void>((resolve) => (this.lastSettled = resolve)), sleep(maxWaitMs, undefined, { ref: false })]);
    if (this.settlingCount > 0) await new Promise<void>((resolve) => this.allSettled.push(resolve));
  }
}
