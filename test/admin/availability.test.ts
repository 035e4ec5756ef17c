/**
 * Only what can answer is offered: a provider without credentials (api_key empty, as
 * `${OPENAI_API_KEY:-}` leaves it when the variable is unset) is "not configured" under
 * GET /api/admin/providers, and a model none of whose providers is configured is marked unavailable
 * in GET /api/prices (the console leaves it out of Add Token and the Playground). A model with one
 * configured provider among others stays available.
 */
import { expect } from 'chai';
import { startTestGateway, PROVIDER_KEYS, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, send } from './api-client';
import { addAccount, PASSWORD, passwordHash } from './fixtures';

const YAML = `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
console: { require_2fa: none, login_failures_per_window: 0 }
providers:
  openai: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: ${PROVIDER_KEYS.openai} }
  keyless: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "" }
models:
  gpt-keyed: { family: openai, routes: [{ provider: openai }], free: true }
  gpt-keyless: { family: openai, routes: [{ provider: keyless }], price: { input: 1, output: 2 }, max_output_tokens: 1000, context_window: 100000 }
  gpt-either: { family: openai, routes: [{ provider: keyless, priority: 1 }, { provider: openai, priority: 2 }], free: true }
plugins:
  auth: { failures_per_minute: 0 }
`;

describe('management API: providers without credentials', function () {
  this.timeout(20_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: YAML });
    await addAccount(tg.store, 'root', 'admin');
  });

  after(async () => {
    await tg?.stop();
  });

  it('marks a model unavailable in the price list when none of its providers has a key', async () => {
    const answer = await send(tg.url, 'GET', '/api/prices');
    expect(answer.status).to.equal(200);
    const available = Object.fromEntries((answer.body.models as { model: string; available: boolean }[]).map((model) => [model.model, model.available]));
    expect(available).to.deep.equal({ 'gpt-keyed': true, 'gpt-keyless': false, 'gpt-either': true });
  });

  it('says which providers are configured', async () => {
    const root = await ApiClient.login(tg.url, 'root', PASSWORD);
    const answer = await root.get('/api/admin/providers');
    expect(answer.status).to.equal(200);
    const configured = Object.fromEntries((answer.body.providers as { name: string; configured: boolean }[]).map((provider) => [provider.name, provider.configured]));
    expect(configured).to.deep.equal({ openai: true, keyless: false });
  });
});
