/**
 * Failures counted per subject (a client address, an account name) in fixed windows, with memory
 * bounded: a window is forgotten once it ends, and the oldest subject goes first when the table is
 * full. What both guessing limits (wrong API keys, wrong console passwords) count with.
 */
interface Window {
  readonly startedAt: number;
  failures: number;
}

export class FailureWindows {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly windowMs: number,
    private readonly maxSubjects = 100_000,
  ) {}

  /** Seconds until `subject` may try again once it has `limit` failures; 0 below that. */
  retryAfter(subject: string, limit: number, now: number): number {
    const window = this.current(subject, now);
    if (window === null || window.failures < limit) return 0;
    return Math.max(1, Math.ceil((window.startedAt + this.windowMs - now) / 1000));
  }

  add(subject: string, now: number): void {
    const window = this.current(subject, now);
    if (window !== null) {
      window.failures += 1;
      return;
    }
    if (this.windows.size >= this.maxSubjects) this.windows.delete(this.windows.keys().next().value as string);
    this.windows.set(subject, { startedAt: now, failures: 1 });
  }

  clear(subject: string): void {
    this.windows.delete(subject);
  }

  private current(subject: string, now: number): Window | null {
    const window = this.windows.get(subject);
    if (window === undefined) return null;
    if (now - window.startedAt < this.windowMs) return window;
    this.windows.delete(subject);
    return null;
  }
}
