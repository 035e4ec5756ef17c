/**
 * A cap on retries across all requests (Envoy's retry budget): a retry may start only while the
 * retries under way are fewer than a share of the requests under way (never fewer than a floor).
 * When a provider fails for everyone, each request still gets its first attempt, but the gateway
 * does not multiply the provider's load by max_attempts just as it is struggling.
 */
export class RetryBudget {
  private requests = 0;
  private retries = 0;

  constructor(
    /** Retries allowed as a percentage of the requests under way. */
    private readonly percent: number,
    /** Retries always allowed, whatever the share says, so a quiet gateway can still fail over. */
    private readonly floor: number,
  ) {}

  /** Counts a request for as long as `work` runs. */
  async around<T>(work: () => Promise<T>): Promise<T> {
    this.requests += 1;
    try {
      return await work();
    } finally {
      this.requests -= 1;
    }
  }

  /** Takes a retry from the budget; false when the budget is spent. Give it back with `release`. */
  tryRetry(): boolean {
    const allowed = Math.max(this.floor, Math.floor((this.requests * this.percent) / 100));
    if (this.retries >= allowed) return false;
    this.retries += 1;
    return true;
  }

  release(): void {
    this.retries -= 1;
  }
}
