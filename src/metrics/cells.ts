/**
 * Metric families whose label sets are resolved once into cells, for the per-request metrics. A
 * prom-client metric hashes its label object on every call (sorting and joining the label values);
 * a cell is found once and then moved with one addition. The families register themselves in the
 * same prom-client registry and hand it the values in the very shape its own Counter, Gauge and
 * Histogram do, so the exposition (names, help, types, label order, buckets, sum, count) is the one
 * prom-client writes for them. A cell appears in the exposition from its first use, as a prom-client
 * label set does from its first call.
 */
import type { Registry } from 'prom-client';

type Labels<L extends string> = Readonly<Record<L, string>>;

/** One label set of a counter or gauge. */
export class ValueCell {
  value = 0;
  constructor(readonly labels: Readonly<Record<string, string>>) {}

  inc(amount = 1): void {
    this.value += amount;
  }

  dec(): void {
    this.value -= 1;
  }
}

/** One label set of a histogram: the count per bucket (not cumulative; the last counts values above every bound), sum and count. */
export class HistogramCell {
  sum = 0;
  count = 0;
  readonly bucketCounts: number[];
  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.bucketCounts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i += 1;
    this.bucketCounts[i] += 1;
    this.sum += value;
    this.count += 1;
  }
}

/** The part of a prom-client metric's configuration a family takes, spelled as prom-client's. */
interface FamilyConfig<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly registers: readonly Registry[];
}

/** A family of cells by label key, registered in prom-client registries as a metric of its own. */
abstract class CellFamily<L extends string, C extends ValueCell | HistogramCell> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly aggregator = 'sum';
  /** By the label values joined; in first-use order, which is the exposition's order. */
  protected readonly cells = new Map<string, C>();

  constructor(config: FamilyConfig<L>) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    // A registry takes any object with a name and get(); its own metrics are no different to it.
    for (const registry of config.registers) registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The cell of these label values, created on first use; `key` must be unique per label set. */
  cell(key: string, labels: Labels<L>): C {
    let cell = this.cells.get(key);
    if (cell === undefined) {
      cell = this.create(labels);
      this.cells.set(key, cell);
    }
    return cell;
  }

  reset(): void {
    this.cells.clear();
  }

  protected abstract create(labels: Labels<L>): C;
}

interface ValueExport {
  help: string;
  name: string;
  type: string;
  values: Array<{ value: number; labels: Readonly<Record<string, string>> }>;
  aggregator: string;
}

/** A counter's or gauge's values, in the shape (and key order) prom-client's own get() gives. */
function valueExport(family: { help: string; name: string; type: string; aggregator: string }, cells: Iterable<ValueCell>): ValueExport {
  const values = [...cells].map((cell) => ({ value: cell.value, labels: cell.labels }));
  return { help: family.help, name: family.name, type: family.type, values, aggregator: family.aggregator };
}

/** A counter of cells. */
export class CellCounter<L extends string> extends CellFamily<L, ValueCell> {
  readonly type = 'counter';

  protected create(labels: Labels<L>): ValueCell {
    return new ValueCell(labels);
  }

  async get(): Promise<ValueExport> {
    return valueExport(this, this.cells.values());
  }
}

/** A gauge of cells. */
export class CellGauge<L extends string> extends CellFamily<L, ValueCell> {
  readonly type = 'gauge';

  protected create(labels: Labels<L>): ValueCell {
    return new ValueCell(labels);
  }

  async get(): Promise<ValueExport> {
    return valueExport(this, this.cells.values());
  }
}

interface HistogramValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
  exemplar?: null;
}

/** A histogram of cells, exposed as prom-client's Histogram exposes itself: buckets (cumulative), +Inf, sum, count per label set. */
export class CellHistogram<L extends string> extends CellFamily<L, HistogramCell> {
  readonly type = 'histogram';
  private readonly bounds: readonly number[];

  constructor(config: FamilyConfig<L> & { readonly buckets: readonly number[] }) {
    super(config);
    this.bounds = [...config.buckets];
  }

  protected create(labels: Labels<L>): HistogramCell {
    return new HistogramCell(labels, this.bounds);
  }
  /** What the registry reads to write the text exposition (labels and shared labels apart, as prom-client's). */
  async getForPromString(): Promise<{ name: string; help: string; type: string; values: HistogramValue[]; aggregator: string }> {
    const bucket = `${this.name}_bucket`;
    const values: HistogramValue[] = [];
    for (const cell of this.cells.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += cell.bucketCounts[i];
        values.push({ labels: { le }, sharedLabels: cell.labels, value: cumulative, metricName: bucket, exemplar: null });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: cell.labels, value: cell.count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: cell.labels, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: cell.labels, value: cell.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The JSON form (registry.getMetricsAsJSON): every value's labels in one object. */
  async get(): Promise<{ name: string; help: string; type: string; values: Array<Omit<HistogramValue, 'sharedLabels'>>; aggregator: string }> {
    const data = await this.getForPromString();
    const values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return { ...data, values };
  }
}
