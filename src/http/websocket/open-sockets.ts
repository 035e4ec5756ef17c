/**
 * The WebSockets open on this instance: pinged together (a client that stops answering is cut off),
 * drained on shutdown as streams are (idle sockets close at once, busy ones once their response is
 * over, with 1001 so clients reconnect elsewhere), and cut at the end of the grace period.
 */
import type { SocketSession } from './socket-session';

/** How often open sockets are pinged; one unanswered ping ends a socket. */
const PING_INTERVAL_MS = 30_000;

export class OpenSockets {
  private readonly sessions = new Set<SocketSession>();
  private pinger: NodeJS.Timeout | null = null;
  private draining = false;

  get size(): number {
    return this.sessions.size;
  }

  /** Whether shutdown has begun: new sockets are refused. */
  get closing(): boolean {
    return this.draining;
  }

  add(session: SocketSession, closed: Promise<void>): void {
    this.sessions.add(session);
    this.pinger ??= setInterval(() => this.pingAll(), PING_INTERVAL_MS).unref();
    void closed.then(() => {
      this.sessions.delete(session);
      if (this.sessions.size === 0 && this.pinger !== null) {
        clearInterval(this.pinger);
        this.pinger = null;
      }
    });
  }

  drain(): void {
    this.draining = true;
    for (const session of this.sessions) session.drain();
  }

  /** Cuts every socket still open (the end of shutdown). */
  terminateAll(): void {
    this.draining = true;
    for (const session of this.sessions) session.terminate();
  }

  private pingAll(): void {
    for (const session of this.sessions) session.ping();
  }
}
