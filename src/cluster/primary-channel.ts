/**
 * A worker's questions to its primary over the cluster IPC channel: each carries an id, the answer
 * with the same id settles it. A question the primary does not answer in time, or asked once the
 * channel is gone, rejects, and the caller decides what that means for its request.
 */
import { isTollgateMessage, type PrimaryMessage, type WorkerMessage } from './messages';

interface Pending {
  readonly resolve: (answer: PrimaryMessage) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

type Question = Extract<WorkerMessage, { id: number }>;

export class PrimaryChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(message: PrimaryMessage) => void>();

  constructor() {
    process.on('message', (message: unknown) => {
      if (!isTollgateMessage<PrimaryMessage>(message)) return;
      if ('id' in message) this.answer(message);
      else for (const listener of this.listeners) listener(message);
    });
    process.once('disconnect', () => this.failAll(new Error('the primary process is gone')));
  }

  /** Sends a question built for a fresh id; resolves with the primary's answer. */
  ask(question: (id: number) => Question, timeoutMs: number): Promise<PrimaryMessage> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!process.connected) return reject(new Error('the primary process is gone'));
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`the primary did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      process.send!(question(id), undefined, undefined, (error: Error | null) => {
        if (error !== null) this.settle(id)?.reject(error);
      });
    });
  }

  /** Sends a message that needs no answer; false when the channel is gone. */
  tell(message: Exclude<WorkerMessage, { id: number }>): boolean {
    if (!process.connected) return false;
    process.send!(message, undefined, undefined, () => undefined);
    return true;
  }

  /** Calls `listener` with every message of the primary that answers no question (reload, stop). */
  onMessage(listener: (message: PrimaryMessage) => void): void {
    this.listeners.add(listener);
  }

  private answer(message: PrimaryMessage & { id: number }): void {
    this.settle(message.id)?.resolve(message);
  }

  private settle(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (pending === undefined) return undefined;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    return pending;
  }

  private failAll(error: Error): void {
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(error);
  }
}

let channel: PrimaryChannel | null = null;

/** This worker's one channel to the primary. */
export function primaryChannel(): PrimaryChannel {
  channel ??= new PrimaryChannel();
  return channel;
}
