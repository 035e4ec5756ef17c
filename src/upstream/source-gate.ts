/**
 * When a relay reads its upstream: while the client wants more and the output count keeps up. Pacing
 * by the count bounds memory when an upstream streams faster than the tokenizer's worker counts (a
 * fake or broken one: real models stream far slower): its windows would otherwise pile up there.
 */
import type { Readable } from 'node:stream';

export class SourceGate {
  /** Whether the client asked for more (`_read`) since it last refused a push. */
  private clientWants = false;
  private countBehind = false;

  constructor(private readonly source: Readable) {}

  /** The client refused a push: read no more until it asks. */
  full(): void {
    this.clientWants = false;
    this.source.pause();
  }

  /** The client asks for more (the relay's `_read`). */
  wanted(): void {
    this.clientWants = true;
    if (!this.countBehind) this.source.resume();
  }

  /** The output count's `behind()`: when not null, read no more until it resolves. */
  waitFor(behind: Promise<void> | null): void {
    if (behind === null || this.countBehind) return;
    this.countBehind = true;
    this.source.pause();
    void behind.then(() => {
      this.countBehind = false;
      if (this.clientWants) this.source.resume();
    });
  }
}
