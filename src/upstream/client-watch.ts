/**
 * Whether the client of a request has left, and the one abort to trip when it does (the attempt under
 * way, or the backoff between two). A plain object rather than an AbortController per request: the
 * client rarely leaves.
 */
import type { Abortable } from './attempt-abort';
import { ABORTED_BY_CLIENT } from './failures';

export class ClientWatch {
  private gone = false;
  private watched: Abortable | null = null;

  get left(): boolean {
    return this.gone;
  }

  /** The client closed the connection: aborts what is watched, and anything watched from now on. */
  leave(): void {
    if (this.gone) return;
    this.gone = true;
    this.watched?.abort(ABORTED_BY_CLIENT);
  }

  /** Aborts `controller` when the client leaves (at once if it has); one at a time. Returns the unwatch. */
  watch(controller: Abortable): () => void {
    this.watched = controller;
    if (this.gone) controller.abort(ABORTED_BY_CLIENT);
    return () => {
      if (this.watched === controller) this.watched = null;
    };
  }
}
