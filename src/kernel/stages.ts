/**
 * The gateway's own stages a request passes, as `tollgate_gateway_stage_seconds` labels them
 * (docs/observability.md#where-the-gateways-time-goes). Few and fixed, so the histogram stays small.
 * A stage's time is read with one `performance.now()` at each of its boundaries and goes straight
 * into a histogram cell resolved once per gateway: timing a request allocates nothing.
 */
export const STAGES = ['auth', 'parse', 'limits', 'hold', 'route', 'translation', 'settle'] as const;

export type Stage = (typeof STAGES)[number];

/** Where one stage's durations go (a histogram cell), in seconds. */
export interface StageObserver {
  observe(seconds: number): void;
}

/** The observer of each stage; the gateway's metrics provide one that outlives reloads. */
export interface StageTimer {
  observer(stage: Stage): StageObserver;
}
