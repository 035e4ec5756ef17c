/**
 * The streamed answers under way, so that shutdown can end those still running at its deadline with
 * the protocol's error event (`cause=shutdown`, docs/faults.md#h1) rather than a bare socket reset.
 */
import type { ServerResponse } from 'node:http';

/** A streamed body that can end itself early, with an error event the client's SDK understands. */
export interface Interruptible {
  /** Ends the stream now: the error event, then the end; the upstream is let go. */
  shutdown(): void;
}

function isInterruptible(body: unknown): body is Interruptible {
  return body !== null && typeof body === 'object' && typeof (body as Partial<Interruptible>).shutdown === 'function';
}

export class ActiveStreams {
  private readonly streams = new Set<Interruptible>();

  /** Tracks `body` (when it is a stream that can be interrupted) until `res` closes. */
  track(body: unknown, res: ServerResponse): void {
    if (!isInterruptible(body) || res.writableFinished) return;
    this.streams.add(body);
    res.once('close', () => this.streams.delete(body));
  }

  get size(): number {
    return this.streams.size;
  }

  /** Ends every stream still running with its error event. */
  interruptAll(): void {
    for (const stream of this.streams) stream.shutdown();
  }
}
