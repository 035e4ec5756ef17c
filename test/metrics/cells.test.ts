/**
 * The cell families expose themselves exactly as prom-client's own metrics do: the same moves made
 * on a prom-client Counter, Gauge and Histogram in one registry and on cell families in another give
 * the same text exposition and the same JSON, label order, bucket edges, +Inf, sum and count included.
 */
import { expect } from 'chai';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { CellCounter, CellGauge, CellHistogram } from '../../src/metrics/cells';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const HEADS = {
  counter: { name: 't_requests_total', help: 'Requests "quoted" and back\\slashed.', labelNames: ['endpoint', 'model'] as const },
  gauge: { name: 't_inflight', help: 'In flight.', labelNames: ['endpoint'] as const },
  histogram: { name: 't_duration_seconds', help: 'Durations.', labelNames: ['endpoint', 'status_class'] as const, buckets: BUCKETS },
};
/** Values on and around every bucket edge, above the last, and sums that are not exact in binary. */
const OBSERVED = [0, 0.001, 0.0010001, 0.005, 0.01, 0.1, 0.3, 1, 1.5, 42, 0.1, 0.2];

describe('metrics/cells', () => {
  it('writes the exposition and JSON prom-client writes for the same counts', async () => {
    const theirs = new Registry();
    const counter = new Counter({ ...HEADS.counter, registers: [theirs] });
    const gauge = new Gauge({ ...HEADS.gauge, registers: [theirs] });
    const histogram = new Histogram({ ...HEADS.histogram, registers: [theirs] });
    const ours = new Registry();
    const cellCounter = new CellCounter({ ...HEADS.counter, registers: [ours] });
    const cellGauge = new CellGauge({ ...HEADS.gauge, registers: [ours] });
    const cellHistogram = new CellHistogram({ ...HEADS.histogram, registers: [ours] });

    OBSERVED.forEach((value, i) => {
      const endpoint = i % 3 === 0 ? 'chat' : 'messages';
      const model = i % 2 === 0 ? 'gpt "x"\n' : 'claude\\y';
      counter.inc({ endpoint, model }, value);
      cellCounter.cell(`${endpoint} ${model}`, { endpoint, model }).inc(value);
      histogram.observe({ endpoint, status_class: '2xx' }, value);
      cellHistogram.cell(endpoint, { endpoint, status_class: '2xx' }).observe(value);
      const inFlight = gauge.labels({ endpoint });
      const cell = cellGauge.cell(endpoint, { endpoint });
      inFlight.inc();
      cell.inc();
      if (i % 2 === 1) {
        inFlight.dec();
        cell.dec();
      }
    });

    const text = await ours.metrics();
    expect(text).to.equal(await theirs.metrics());
    expect(text).to.include('t_duration_seconds_bucket{le="+Inf",endpoint="chat",status_class="2xx"}');
    expect(JSON.stringify(await ours.getMetricsAsJSON())).to.equal(JSON.stringify(await theirs.getMetricsAsJSON()));
  });

  it('shows a label set from its first use, with zero counts until observed', async () => {
    const theirs = new Registry();
    const histogram = new Histogram({ ...HEADS.histogram, registers: [theirs] });
    const ours = new Registry();
    const cells = new CellHistogram({ ...HEADS.histogram, registers: [ours] });
    expect(await ours.metrics()).to.equal(await theirs.metrics());
    histogram.zero({ endpoint: 'chat', status_class: '5xx' });
    cells.cell('chat', { endpoint: 'chat', status_class: '5xx' });
    expect(await ours.metrics()).to.equal(await theirs.metrics());
  });

  it('returns the same cell for the same key', () => {
    const family = new CellCounter({ ...HEADS.counter, registers: [new Registry()] });
    const cell = family.cell('a', { endpoint: 'chat', model: 'm' });
    cell.inc(2);
    expect(family.cell('a', { endpoint: 'chat', model: 'm' })).to.equal(cell);
    expect(cell.value).to.equal(2);
  });
});
