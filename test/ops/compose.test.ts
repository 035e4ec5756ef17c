/**
 * compose.yaml publishes both gateways' ports, so /metrics there must be guarded: each gateway is
 * given METRICS_TOKEN as a required variable (compose refuses to start without it) and Prometheus
 * scrapes with the same token. Docker has no daemon in CI, so the files are read, not run.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { parseConfig } from '../../src/config/load';

const ROOT = join(__dirname, '..', '..', '..');
const read = (file: string): unknown => parse(readFileSync(join(ROOT, file), 'utf8'));

interface ComposeFile {
  services: Record<string, { environment?: Record<string, string>; configs?: { source: string; target: string }[] }>;
  configs: Record<string, { content: string }>;
}

interface PrometheusFile {
  scrape_configs: { authorization?: { type?: string; credentials_file?: string } }[];
}

describe('compose.yaml: /metrics guarded by a token from the environment', function () {
  const compose = read('compose.yaml') as ComposeFile;
  const gateways = Object.entries(compose.services).filter(([name]) => name.startsWith('gateway'));

  it('requires METRICS_TOKEN for every gateway', function () {
    expect(gateways).to.have.length.greaterThan(0);
    for (const [name, service] of gateways) {
      expect(service.environment?.METRICS_TOKEN, name).to.match(/^\$\{METRICS_TOKEN:\?.+\}$/);
    }
  });

  it('the gateways read it as server.metrics_token', function () {
    const text = readFileSync(join(ROOT, 'deploy', 'gateway.yaml'), 'utf8');
    const config = parseConfig(text, 'deploy/gateway.yaml', { METRICS_TOKEN: 'from-env', POSTGRES_URL: 'postgres://x/y' });
    expect(config.server.metrics_token).to.equal('from-env');
  });

  it('Prometheus scrapes with the same token, from the file compose mounts', function () {
    const mounted = compose.services.prometheus?.configs?.find((entry) => compose.configs[entry.source] !== undefined);
    expect(mounted, 'a compose config mounted into prometheus').to.not.equal(undefined);
    expect(compose.configs[mounted!.source].content).to.match(/^\$\{METRICS_TOKEN:\?.+\}$/);
    const prometheus = read(join('deploy', 'prometheus.yml')) as PrometheusFile;
    for (const job of prometheus.scrape_configs) {
      expect(job.authorization).to.deep.equal({ type: 'Bearer', credentials_file: mounted!.target });
    }
  });
});
