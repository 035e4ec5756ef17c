/**
 * docs/grafana-dashboard.json against a running gateway's /metrics: every metric a panel queries
 * exists (a histogram through its _bucket, _sum or _count series), so a renamed or removed metric
 * fails here instead of leaving an empty panel.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PACKAGE_ROOT } from '../../src/paths';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

interface Panel {
  readonly title: string;
  readonly targets: readonly { readonly expr: string }[];
}

const METRIC = /\b(?:tollgate|gen_ai|nodejs|process)_[a-z0-9_]+\b/g;
const HISTOGRAM_SERIES = /_(?:bucket|sum|count)$/;

/** The metric names in a PromQL expression: label matchers, `by (…)` and `without (…)` lists taken out first. */
function metricsOf(expr: string): string[] {
  const bare = expr.replace(/\{[^}]*\}/g, '').replace(/\b(?:by|without)\s*\([^)]*\)/g, '');
  return bare.match(METRIC) ?? [];
}

/** Every `# TYPE name kind` line of a scrape. */
function exposed(scrape: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const match of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1], match[2]);
  return types;
}

describe('docs/grafana-dashboard.json', () => {
  let tg: TestGateway;
  const dashboard = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as { panels: Panel[] };

  before(async () => {
    tg = await startTestGateway();
  });
  after(async () => tg?.stop());

  it('covers requests, errors, latency, time to first token, tokens, cost, breakers and funds held', () => {
    const titles = dashboard.panels.map((panel) => panel.title.toLowerCase()).join('\n');
    for (const topic of ['requests', 'errors', 'latency', 'first token', 'tokens', 'cost', 'breakers', 'in flight']) expect(titles).to.include(topic);
  });

  it('queries only metrics that GET /metrics exposes', async () => {
    const types = exposed(await (await fetch(`${tg.url}/metrics`)).text());
    const missing: string[] = [];
    let checked = 0;
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        for (const name of metricsOf(target.expr)) {
          checked += 1;
          const base = name.replace(HISTOGRAM_SERIES, '');
          const found = types.has(name) || (base !== name && (types.get(base) === 'histogram' || types.get(base) === 'summary'));
          if (!found) missing.push(`${panel.title}: ${name}`);
        }
      }
    }
    expect(checked).to.be.above(20);
    expect(missing).to.deep.equal([]);
  });

  it('finds the metric names in an expression, not its label names', () => {
    expect(metricsOf('sum by (gen_ai_token_type) (rate(gen_ai_client_token_usage_sum{gen_ai_request_model="x"}[5m]))')).to.deep.equal(['gen_ai_client_token_usage_sum']);
  });
});
