/**
 * One attempt's abort: the deadline, or the client leaving, cancels the attempt under way and nothing
 * else. Not an AbortController: making one and its AbortSignal (an EventTarget) is a cost that shows per
 * request (docs/benchmarks.md), and every request makes one for its attempt though almost none is ever
 * aborted. This is the part of
 * AbortSignal that undici (`request({ signal })`) and the echo provider use, over a listener list.
 */

/** What the code sending an attempt sees of its abort; an AbortSignal is one too (tests pass those). */
export interface AttemptSignal {
  readonly aborted: boolean;
  /** Why it was aborted (`ABORTED_BY_CLIENT`, `ABORTED_BY_DEADLINE`); undefined until then. */
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
  throwIfAborted(): void;
}

/** Anything an attempt's abort can be wired to: this, or an AbortController. */
export interface Abortable {
  abort(reason: unknown): void;
}

export class AttemptAbort implements AttemptSignal, Abortable {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | null = null;

  /** Itself: the signal and its controller are one object. */
  get signal(): AttemptSignal {
    return this;
  }

  /** Aborts once, with `reason`; the listeners added so far are called, in order. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners !== null) for (const listener of listeners) listener();
  }

  /** As on an EventTarget: a listener added after the abort is never called. */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1;
    if (index !== -1) this.listeners!.splice(index, 1);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }
}
