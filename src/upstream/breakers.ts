/**
 * One circuit breaker per provider (opossum), judging attempts up to their commit point: an attempt
 * is timed to its first byte, never for a whole stream, and each attempt keeps its own abort
 * (`AttemptAbort`; opossum's breaker-wide AbortController would abort every call at once: opossum #780). Client
 * errors and client aborts do not count against a provider. Breaker state is per instance.
 */
import CircuitBreaker from 'opossum';
import type { Logger } from 'pino';
import type { BreakerConfig } from '../config/types';
import { AttemptFailure } from './attempt';

/** Thrown instead of running an attempt when the provider's breaker is open. */
export class BreakerOpenError extends Error {
  override readonly name = 'BreakerOpenError';
  constructor(
    readonly provider: string,
    /** When the breaker lets a probe through, in ms since the epoch. */
    readonly halfOpenAt: number,
  ) {
    super(`the circuit breaker of provider '${provider}' is open`);
  }
}

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface ProviderHealth {
  readonly state: BreakerState;
  /** The rolling window the counts cover. */
  readonly windowMs: number;
  readonly attempts: number;
  readonly failures: number;
}

type Attempt = () => Promise<unknown>;

interface Entry {
  readonly breaker: CircuitBreaker<[Attempt], unknown>;
  openedAt: number;
}

/** An error that says nothing about the provider's health: opossum counts it as a success. */
function isClientCaused(error: unknown): boolean {
  return error instanceof AttemptFailure && !error.countsAgainstProvider;
}

export class ProviderBreakers {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly config: BreakerConfig,
    private readonly logger: Logger,
  ) {}

  /** Runs `attempt` through `provider`'s breaker; rejects with BreakerOpenError when it is open. */
  async run<T>(provider: string, attempt: () => Promise<T>): Promise<T> {
    if (!this.config.enabled) return attempt();
    const entry = this.entry(provider);
    try {
      return (await entry.breaker.fire(attempt)) as T;
    } catch (error) {
      if ((error as { code?: string }).code === 'EOPENBREAKER') {
        throw new BreakerOpenError(provider, entry.openedAt + this.config.reset_timeout_ms);
      }
      throw error;
    }
  }

  /**
   * Counts a failure that came after the commit point (a stream broken mid-way): the provider failed
   * even though its attempt had succeeded at first byte.
   */
  recordFailure(provider: string, error: unknown): void {
    if (!this.config.enabled) return;
    this.entry(provider).breaker.fire(() => Promise.reject(error)).catch(() => undefined);
  }

  state(provider: string): BreakerState {
    const breaker = this.entries.get(provider)?.breaker;
    if (breaker === undefined || breaker.closed) return 'closed';
    return breaker.halfOpen ? 'half_open' : 'open';
  }

  /**
   * What the breaker saw of `provider` over its rolling window: attempts judged (successes plus
   * failures; client-caused errors count as successes) and failures, rejected calls not included.
   */
  health(provider: string): ProviderHealth {
    const breaker = this.entries.get(provider)?.breaker;
    const windowMs = this.config.rolling_window_ms;
    if (breaker === undefined) return { state: 'closed', windowMs, attempts: 0, failures: 0 };
    const { successes, failures } = breaker.stats;
    return { state: this.state(provider), windowMs, attempts: successes + failures, failures };
  }

  /** Stops every breaker's timers. */
  shutdown(): void {
    for (const { breaker } of this.entries.values()) breaker.shutdown();
  }

  private entry(provider: string): Entry {
    let entry = this.entries.get(provider);
    if (entry !== undefined) return entry;
    const breaker = new CircuitBreaker<[Attempt], unknown>((attempt: Attempt) => attempt(), {
      timeout: false, // attempts time themselves (connect, first byte, deadline); a stream is never timed whole
      errorThresholdPercentage: this.config.error_threshold_percent,
      volumeThreshold: this.config.volume_threshold,
      resetTimeout: this.config.reset_timeout_ms,
      rollingCountTimeout: this.config.rolling_window_ms,
      errorFilter: isClientCaused,
    });
    const created: Entry = { breaker, openedAt: 0 };
    breaker.on('open', () => {
      created.openedAt = Date.now();
      this.logger.warn({ provider }, `circuit breaker of provider "${provider}" opened`);
    });
    breaker.on('halfOpen', () => this.logger.info({ provider }, `circuit breaker of provider "${provider}" half-open: one probe goes through`));
    breaker.on('close', () => this.logger.info({ provider }, `circuit breaker of provider "${provider}" closed`));
    this.entries.set(provider, created);
    entry = created;
    return entry;
  }
}
