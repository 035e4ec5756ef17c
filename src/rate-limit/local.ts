/**
 * The in-process back end: counters in two Maps, exact for one instance. Used alone without Redis,
 * and as the fallback while Redis is unreachable. Memory stays bounded by the subjects active in the
 * last two windows: closed windows are swept at most once per window, idle in-flight counters removed
 * when they reach zero.
 */
import { firstExceeded, shareOf, WINDOW_MS, type Admission, type Counters, type Decision, type LimitRequest, type Limiter, type SubjectUsage } from './limiter';

interface Window {
  readonly start: number;
  requests: number;
  tokens: number;
}

export interface LocalLimiterOptions {
  /** The clock, for tests; `Date.now` otherwise. */
  readonly now?: () => number;
  readonly windowMs?: number;
  /** Every limit is divided by this, rounded up (an instance's share during a Redis outage). */
  readonly divisor?: number;
}

export class LocalLimiter implements Limiter {
  private readonly windows = new Map<string, Window>();
  private readonly inflight = new Map<string, number>();
  private readonly now: () => number;
  private readonly windowMs: number;
  private readonly divisor: number;
  private lastSweep: number;

  constructor(options: LocalLimiterOptions = {}) {
    this.now = options.now ?? Date.now;
    this.windowMs = options.windowMs ?? WINDOW_MS;
    this.divisor = options.divisor ?? 1;
    this.lastSweep = this.now();
  }

  /** Subjects with state held, for tests of the bound on memory. */
  get size(): number {
    return new Set([...this.windows.keys(), ...this.inflight.keys()]).size;
  }

  acquire(request: LimitRequest): Promise<Decision> {
    return Promise.resolve(this.decide(request));
  }

  /** `acquire`, synchronously. */
  decide({ requestId, subjects, tokens }: LimitRequest): Decision {
    const now = this.now();
    this.sweepEvery(now);
    const limits = subjects.map((subject) => shareOf(subject.limits, this.divisor));
    const windows = subjects.map((subject) => this.openWindow(subject.id, now));
    const counters: Counters[] = subjects.map((subject, i) => ({
      requests: windows[i].requests,
      tokens: windows[i].tokens,
      inflight: this.inflight.get(subject.id) ?? 0,
    }));
    const exceeded = firstExceeded(limits, counters, tokens);
    if (exceeded === null) {
      subjects.forEach((subject, i) => {
        windows[i].requests += 1;
        windows[i].tokens += tokens;
        this.windows.set(subject.id, windows[i]);
        this.inflight.set(subject.id, counters[i].inflight + 1);
      });
    }
    const usage: SubjectUsage[] = subjects.map((subject, i) => ({
      limits: limits[i],
      requests: windows[i].requests,
      tokens: windows[i].tokens,
      inflight: this.inflight.get(subject.id) ?? 0,
      resetMs: windows[i].start + this.windowMs - now,
    }));
    if (exceeded !== null) return { ok: false, ...exceeded, usage, backend: 'local' };
    const admission: Admission = { requestId, subjects, windows: windows.map((w) => w.start), tokens, backend: 'local' };
    return { ok: true, admission, usage };
  }

  release(admission: Admission, actualTokens: number | null): Promise<void> {
    this.releaseNow(admission, actualTokens);
    return Promise.resolve();
  }

  /** `release`, synchronously. */
  releaseNow({ subjects, windows, tokens }: Admission, actualTokens: number | null): void {
    subjects.forEach((subject, i) => {
      const inflight = (this.inflight.get(subject.id) ?? 0) - 1;
      if (inflight > 0) this.inflight.set(subject.id, inflight);
      else this.inflight.delete(subject.id);
      // A correction after the window closed changes nothing: its counters are gone.
      const window = this.windows.get(subject.id);
      if (actualTokens !== null && window !== undefined && window.start === windows[i]) {
        window.tokens = Math.max(0, window.tokens + actualTokens - tokens);
      }
    });
  }

  /** Removes every closed window. */
  sweep(): void {
    const now = this.now();
    this.lastSweep = now;
    for (const [id, window] of this.windows) if (now >= window.start + this.windowMs) this.windows.delete(id);
  }

  close(): Promise<void> {
    this.windows.clear();
    this.inflight.clear();
    return Promise.resolve();
  }

  private sweepEvery(now: number): void {
    if (now - this.lastSweep >= this.windowMs) this.sweep();
  }

  /** The subject's open window, or a fresh one (not stored until a request is admitted into it). */
  private openWindow(id: string, now: number): Window {
    const window = this.windows.get(id);
    if (window !== undefined && now < window.start + this.windowMs) return window;
    return { start: now, requests: 0, tokens: 0 };
  }
}
