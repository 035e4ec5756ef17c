/**
 * Password hashing one at a time, with a short queue. Each scrypt takes 128 MiB and a thread of
 * libuv's small pool for a third of a second: run unbounded, a burst of logins (each from its own
 * address, each under the login limit) fills the pool that gzip, DNS and file reads share, and the
 * memory grows by 128 MiB per hash under way. Past the queue a caller is refused at once
 * (`HashingBusyError`, a 503 with retry-after), which costs nothing.
 */

export class HashingBusyError extends Error {
  override readonly name = 'HashingBusyError';
  constructor(readonly retryAfterSeconds: number) {
    super('too many password checks under way');
  }
}

export class HashQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  /**
   * @param concurrency hashes run at once
   * @param maxWaiting hashes that may wait for a turn; one more is refused
   */
  constructor(
    private readonly concurrency: number,
    private readonly maxWaiting: number,
  ) {}

  /** Runs `work` when its turn comes; throws `HashingBusyError` when the queue is full. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxWaiting) throw new HashingBusyError(Math.max(1, Math.ceil(this.waiting.length / (2 * this.concurrency))));
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next in line, so `running` never drops below what is running.
      if (next === undefined) this.running -= 1;
      else next();
    }
  }

  /** Hashes running or waiting, for tests and metrics. */
  get load(): number {
    return this.running + this.waiting.length;
  }
}
