/**
 * `tollgate_gateway_stage_seconds`: every stage is in /metrics from the start, and a paid request
 * through the default chain is counted once in each stage it passes. Counts only: the durations are
 * figures for the bench, never asserted.
 */
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { unitsToNano } from '../../src/billing/money';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { STAGES } from '../../src/kernel/stages';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { parseSamples, sampleValue, type Sample } from '../helpers/prometheus';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { anthropicMessage } from '../helpers/upstream-replies';

const yaml = (url: string) => `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  a: { protocol: anthropic, base_url: ${url}, api_key: ${PROVIDER_KEYS.anthropic} }
models:
  claude-paid: { family: anthropic, routes: [{ provider: a }], price: { input: 1, output: 5 }, max_output_tokens: 4096, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  rate-limit: { per_key: { rpm: 1000 } }
`;

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).to.equal(200);
  return parseSamples(await res.text());
}

const count = (samples: Sample[], stage: string) => sampleValue(samples, 'tollgate_gateway_stage_seconds_count', { stage });

/** Scrapes until the settle stage has counted `n` requests: it is observed once the charge settled. */
async function scrapeAfterSettled(url: string, n: number): Promise<Sample[]> {
  let samples: Sample[] = [];
  for (let tries = 0; tries < 200; tries++) {
    samples = await scrape(url);
    if ((count(samples, 'settle') ?? 0) >= n) return samples;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`settle counted ${count(samples, 'settle')} of ${n} requests`);
}

describe('e2e: the gateway stage histogram', () => {
  let upstream: FakeUpstream;
  let store: Store;
  let gateway: Gateway;
  let key: string;

  before(async () => {
    upstream = await startFakeUpstream();
    store = openStore({ url: 'sqlite::memory:' });
    await store.migrate();
    const account = await store.createAccount({ name: 'stages', role: 'user' });
    await store.credit({ accountId: account.id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'funds' });
    key = (await issueApiKey(store, { accountId: account.id, name: null })).key;
    gateway = await startGateway({ config: parseConfig(yaml(upstream.url), 'stages.yaml', {}), port: 0, store, logger: pino({ level: 'silent' }) });
  });
  after(async () => {
    await gateway?.stop(500);
    await store?.close();
    await upstream?.close();
  });

  const ask = () =>
    fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-paid', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] }),
    });

  it('shows every stage, with no request counted, before the first request', async () => {
    const samples = await scrape(gateway.url);
    expect(STAGES).to.have.members(['auth', 'parse', 'limits', 'hold', 'route', 'translation', 'settle']);
    for (const stage of STAGES) expect(count(samples, stage), stage).to.equal(0);
  });

  it('counts each paid request once in every stage it passes', async () => {
    for (let i = 1; i <= 2; i++) {
      upstream.enqueue(anthropicMessage({ inputTokens: 10, outputTokens: 5 }));
      const res = await ask();
      expect(res.status).to.equal(200);
      await res.text();
      const samples = await scrapeAfterSettled(gateway.url, i);
      for (const stage of STAGES) {
        expect(count(samples, stage), stage).to.equal(i);
        expect(sampleValue(samples, 'tollgate_gateway_stage_seconds_sum', { stage }), stage).to.be.at.least(0);
      }
    }
  });

  it('counts a request auth refuses in the auth stage only', async () => {
    const before = await scrape(gateway.url);
    const res = await fetch(`${gateway.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': 'sk-not-a-key', 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).to.equal(401);
    const after = await scrape(gateway.url);
    for (const stage of STAGES) expect(count(after, stage), stage).to.equal(count(before, stage));
  });
});
