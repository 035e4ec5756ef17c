/**
 * Reading Prometheus text exposition in tests: every sample as name, labels and value, and the value
 * of one sample picked by name and its exact label set (label order does not matter).
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name] = value.replace(/\\(.)/g, '$1');
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key]);
}

/** The value of the sample `name{labels}`; undefined when there is no such sample. */
export function sampleValue(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  return samples.find((sample) => sample.name === name && sameLabels(sample.labels, labels))?.value;
}

/** Every sample of `name`, for "no such series" checks. */
export function samplesOf(samples: readonly Sample[], name: string): Sample[] {
  return samples.filter((sample) => sample.name === name);
}

/** The sum of every sample of `name`. */
export function total(samples: readonly Sample[], name: string): number {
  return samplesOf(samples, name).reduce((sum, sample) => sum + sample.value, 0);
}
