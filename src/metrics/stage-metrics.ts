/**
 * `tollgate_gateway_stage_seconds`: the gateway's own time per request in each of its stages
 * (src/kernel/stages.ts). One histogram cell per stage, all made with the registry, so every stage
 * shows in `/metrics` from the start and timing a request only moves a cell it already holds.
 */
import type { Registry } from 'prom-client';
import { STAGES, type Stage, type StageObserver, type StageTimer } from '../kernel/stages';
import { CellHistogram, type HistogramCell } from './cells';

/** A stage takes microseconds; a slow store or a backoff, up to a quarter second. */
const STAGE_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

export class StageMetrics implements StageTimer {
  private readonly cells: ReadonlyMap<Stage, HistogramCell>;

  constructor(registry: Registry) {
    const histogram = new CellHistogram({
      name: 'tollgate_gateway_stage_seconds',
      help: "The gateway's own time per request in each stage: auth, parse (reading and checking the body), limits, hold, route (the upstream plugin outside its attempts), translation (building each attempt's upstream request), settle (from the answer's end to its charge).",
      labelNames: ['stage'] as const,
      buckets: STAGE_BUCKETS,
      registers: [registry],
    });
    this.cells = new Map(STAGES.map((stage) => [stage, histogram.cell(stage, { stage })]));
  }

  observer(stage: Stage): StageObserver {
    return this.cells.get(stage)!;
  }
}
