/**
 * Limits gateway.yaml leaves out come from the pinned catalog: the config carries the catalog's
 * figures and says where they came from, a request is held at them, and a limit no catalog has is
 * still an error naming the model's line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { catalogModel } from '../../src/catalog/catalog';
import { LIMITS_SOURCE, PRICES_SOURCE } from '../../src/catalog/sources';
import { PACKAGE_ROOT } from '../../src/paths';
import { ConfigError } from '../../src/config/config-error';
import { parseConfig } from '../../src/config/load';
import { chatCompletion } from '../helpers/upstream-replies';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';

function yaml(upstream: string, model: string): string {
  return `
version: 1
server: { host: 127.0.0.1, shutdown_unready_ms: 0 }
providers:
  openai: { protocol: openai, base_url: ${upstream}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
${model}
plugins:
  upstream: { failover: { max_attempts: 1 } }
`;
}

describe('the pinned catalogs', () => {
  it('are the versions package.json pins exactly, as sources.ts names them', () => {
    const manifest = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const source of [PRICES_SOURCE, LIMITS_SOURCE]) {
      expect(manifest.dependencies[source.package]).to.equal(source.version);
      const installed = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'node_modules', source.package, 'package.json'), 'utf8')) as { version: string };
      expect(installed.version).to.equal(source.version);
    }
  });
});

describe('limits from the catalog', () => {
  // gpt-5-mini: genai-prices lists a 400,000-token window, models.dev a 128,000-token output limit.
  const catalog = catalogModel({ protocol: 'openai', base_url: 'https://api.openai.com/v1' }, 'gpt-5-mini');

  it('finds gpt-5-mini in both catalogs', () => {
    expect(catalog).to.not.equal(null);
    expect(catalog!.contextWindow).to.equal(400_000);
    expect(catalog!.maxOutputTokens).to.equal(128_000);
  });

  it('fills in the limits a priced model leaves out, and lists each with its source', () => {
    const config = parseConfig(yaml('http://127.0.0.1:9', '  gpt-5-mini: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 } }'), 'limits.yaml', {});
    expect(config.models['gpt-5-mini'].context_window).to.equal(catalog!.contextWindow);
    expect(config.models['gpt-5-mini'].max_output_tokens).to.equal(catalog!.maxOutputTokens);
    expect(config.catalog_limits!.map((limit) => [limit.model, limit.field, limit.value])).to.deep.equal([
      ['gpt-5-mini', 'context_window', 400_000],
      ['gpt-5-mini', 'max_output_tokens', 128_000],
    ]);
    expect(config.catalog_limits![0].source).to.match(/^@pydantic\/genai-prices 0\.1\.8 \(2026-09-23\): openai gpt-5-mini$/);
    expect(config.catalog_limits![1].source).to.match(/^@tokenlens\/models 1\.3\.0 \(2026-01-22\): openai gpt-5-mini$/);
  });

  it('keeps the figures the file states', () => {
    const config = parseConfig(
      yaml('http://127.0.0.1:9', '  gpt-5-mini: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 2000 }'),
      'limits.yaml',
      {},
    );
    expect(config.models['gpt-5-mini'].max_output_tokens).to.equal(1000);
    expect(config.models['gpt-5-mini'].context_window).to.equal(2000);
    expect(config.catalog_limits).to.equal(undefined);
  });

  it('names the model\'s line when neither the file nor the catalog has a limit', () => {
    const text = yaml('http://127.0.0.1:9', '  house-model:\n    family: openai\n    routes: [{ provider: openai }]\n    price: { input: 1, output: 5 }');
    expect(() => parseConfig(text, 'limits.yaml', {}))
      .to.throw(ConfigError)
      .with.property('message')
      .that.matches(/^limits\.yaml:8:5 models\.house-model: a priced model needs context_window: .*the catalog has none for it$/m)
      .and.matches(/^limits\.yaml:8:5 models\.house-model: a priced model needs max_output_tokens: .*the catalog has none for it$/m);
  });

  describe('serving a model without limits', () => {
    let fake: FakeUpstream;
    let tg: TestGateway;
    // Price 5 per 1M output tokens: a request that sets no limit holds 128,000 output tokens (0.64
    // units) at the catalog's limit; the schema's 4,096 for a model without one would hold 0.02.
    const model = '  gpt-5-mini: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 } }';

    beforeEach(async () => {
      fake = await startFakeUpstream();
      tg = await startTestGateway({ yaml: yaml(fake.url, model) });
    });
    afterEach(async () => {
      await fake.close();
      await tg.stop();
    });

    async function ask(): Promise<Response> {
      return fetch(`${tg.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` },
        body: JSON.stringify({ model: 'gpt-5-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
    }

    it('holds the catalog\'s output limit: refused below it, served above it', async () => {
      await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('0.5'), kind: 'admin', actor: 'test', note: 'below the hold' });
      const refused = await ask();
      expect(refused.status).to.equal(402);
      await refused.text();
      expect(fake.requests).to.have.length(0);

      await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('0.5'), kind: 'admin', actor: 'test', note: 'above the hold' });
      fake.enqueue(chatCompletion({ inputTokens: 10, outputTokens: 5 }));
      const served = await ask();
      expect(served.status).to.equal(200);
      await served.text();
      // A translated request would be sent the same limit; a native one is forwarded as the client wrote it.
      expect(fake.requests).to.have.length(1);
    });
  });
});
