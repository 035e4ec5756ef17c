/**
 * Which client headers reach a provider, per wire protocol (docs/decisions.md#d17-forwarded-headers-are-an-allow-list):
 * each request carries every header the SDKs, Claude Code and Codex send, the ones the provider's
 * docs name, and ones nobody names; the fake provider lists what arrived, and any header that is
 * neither in the protocol's table of forwarded headers nor one the gateway itself writes fails the test.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import { request } from 'undici';
import type { ProviderProtocol } from '../../src/config/types';
import { FORWARDED_HEADERS } from '../../src/wire/forwarded-headers';
import { startCloudGateway, type CloudSetup } from '../helpers/cloud-gateway';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

/** What a client may send: SDK diagnostics, Claude Code's and Codex's own, account pickers, and made-up names. */
const SENT: Readonly<Record<string, string>> = {
  'user-agent': 'header-test/1.0',
  accept: 'application/json',
  'x-stainless-lang': 'js',
  'x-stainless-os': 'Linux',
  'x-stainless-retry-count': '0',
  'x-stainless-timeout': '600',
  'x-stainless-made-up': 'yes',
  // Anthropic's own, and names one step from them.
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'prompt-caching-2024-07-31',
  'anthropic-organization-id': 'org-of-the-client',
  'anthropic-workspace-id': 'wrkspc-of-the-client',
  'anthropic-admin-key': 'sk-ant-admin-of-the-client',
  'anthropic-workspace': 'workspace-of-the-client',
  'anthropic-project-id': 'project-of-the-client',
  'anthropic-dangerous-direct-browser-access': 'true',
  'x-claude-code-session-id': 'claude-session-1',
  'x-claude-code-anything': 'made-up',
  'x-app': 'cli',
  // OpenAI's and Codex's.
  'openai-organization': 'org-of-the-client',
  'openai-project': 'proj-of-the-client',
  'openai-beta': 'responses=experimental, responses_websockets=2026-02-06, assistants=v2',
  'openai-beta-anything': 'made-up',
  originator: 'codex_exec',
  version: '0.169.0',
  session_id: 'codex-session-1',
  conversation_id: 'codex-session-1',
  'chatgpt-account-id': 'chatgpt-account-of-the-client',
  'x-codex-turn-state': 'sticky-token',
  // Nobody's.
  'x-custom-upstream-secret': 'do-not-forward',
  origin: 'https://example.com',
};

/** The headers the gateway writes itself on every native request, besides the provider's credential. */
const WRITTEN_BY_GATEWAY = ['host', 'connection', 'content-type', 'content-length', 'accept-encoding', 'x-request-id', 'transfer-encoding'];
/** The provider's credential, and what its protocol sets on every request (Bedrock asks for JSON itself). */
const WRITTEN_BY_PROTOCOL: Readonly<Record<ProviderProtocol, readonly string[]>> = {
  openai: ['authorization'],
  anthropic: ['x-api-key'],
  vertex: ['authorization'],
  bedrock: ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256', 'accept'],
  echo: [],
};

function forwardedBy(protocol: ProviderProtocol): string[] {
  return Object.entries(FORWARDED_HEADERS[protocol])
    .filter(([, rule]) => rule.action === 'forward')
    .map(([name]) => name);
}

/** Fails naming every header that reached the provider without being in the protocol's table. */
function expectOnlyTableHeaders(protocol: ProviderProtocol, received: IncomingHttpHeaders): void {
  const allowed = new Set([...forwardedBy(protocol), ...WRITTEN_BY_GATEWAY, ...WRITTEN_BY_PROTOCOL[protocol]]);
  const arrived = Object.keys(received).sort();
  expect(arrived.filter((name) => !allowed.has(name)), `${protocol} got: ${arrived.join(', ')}`).to.deep.equal([]);
  // None of the client's account, credential or made-up values crossed under any name.
  const values = JSON.stringify(received);
  for (const secret of ['of-the-client', 'do-not-forward', 'made-up', 'sticky-token']) expect(values, protocol).to.not.contain(secret);
}

async function post(url: string, path: string, key: string, body: object, headers: Record<string, string> = SENT): Promise<number> {
  const response = await request(`${url}${path}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  await response.body.text();
  return response.statusCode;
}

async function droppedCount(tg: TestGateway, protocol: string, header: string): Promise<number> {
  const { body } = await tg.gateway.metrics.scrape();
  const line = body.split('\n').find((text) => text.startsWith(`tollgate_upstream_headers_dropped_total{protocol="${protocol}",header="${header}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

const CHAT = { model: 'gpt-test', messages: [{ role: 'user', content: 'Hi' }] };
const RESPONSES = { model: 'gpt-test', input: 'Hi' };
const MESSAGES = { model: 'claude-sonnet-5', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] };

describe('e2e: forwarded request headers, per wire protocol', function () {
  this.timeout(20000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
  });
  after(async () => {
    await tg?.stop();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  it('chat completions (openai): only the table reaches the provider, openai-beta cut to its known value', async () => {
    expect(await post(tg.url, '/v1/chat/completions', tg.key, CHAT)).to.equal(200);
    const [upstream] = fake.requests;
    expectOnlyTableHeaders('openai', upstream.headers);
    expect(upstream.headers['openai-beta']).to.equal('responses=experimental');
    expect(upstream.headers.session_id).to.equal('codex-session-1');
    expect(upstream.headers['user-agent']).to.equal('header-test/1.0');
  });

  it('responses (openai): the same table; Codex\'s ChatGPT account never reaches an API-key provider', async () => {
    expect(await post(tg.url, '/v1/responses', tg.key, RESPONSES)).to.equal(200);
    const [upstream] = fake.requests;
    expectOnlyTableHeaders('openai', upstream.headers);
    expect(upstream.headers).to.not.have.property('chatgpt-account-id');
    expect(upstream.headers).to.not.have.property('originator');
  });

  it('drops openai-beta whole when none of its values is one the table forwards', async () => {
    expect(await post(tg.url, '/v1/responses', tg.key, RESPONSES, { 'openai-beta': 'responses_websockets=2026-02-06' })).to.equal(200);
    expect(fake.requests[0].headers).to.not.have.property('openai-beta');
  });

  it('messages (anthropic): version, betas and the Claude Code session pass; the rest of anthropic-* stays behind', async () => {
    expect(await post(tg.url, '/v1/messages', tg.key, MESSAGES)).to.equal(200);
    const [upstream] = fake.requests;
    expectOnlyTableHeaders('anthropic', upstream.headers);
    expect(upstream.headers['anthropic-version']).to.equal('2023-06-01');
    expect(upstream.headers['anthropic-beta']).to.equal('prompt-caching-2024-07-31');
    expect(upstream.headers['x-claude-code-session-id']).to.equal('claude-session-1');
  });

  it('count_tokens (anthropic): the same table', async () => {
    const { max_tokens: _max, ...counted } = MESSAGES;
    expect(await post(tg.url, '/v1/messages/count_tokens', tg.key, counted)).to.equal(200);
    expectOnlyTableHeaders('anthropic', fake.requests[0].headers);
  });

  it('counts what it drops, by the names the table knows and the rest as other', async () => {
    const before = {
      browser: await droppedCount(tg, 'anthropic', 'anthropic-dangerous-direct-browser-access'),
      other: await droppedCount(tg, 'anthropic', 'other'),
      account: await droppedCount(tg, 'openai', 'chatgpt-account-id'),
    };
    expect(await post(tg.url, '/v1/messages', tg.key, MESSAGES)).to.equal(200);
    expect(await post(tg.url, '/v1/chat/completions', tg.key, CHAT)).to.equal(200);
    expect(await droppedCount(tg, 'anthropic', 'anthropic-dangerous-direct-browser-access')).to.equal(before.browser + 1);
    // anthropic-admin-key, anthropic-workspace, anthropic-project-id, x-claude-code-anything, x-stainless-made-up,
    // x-custom-upstream-secret, and the OpenAI and Codex names this protocol's table does not know.
    expect(await droppedCount(tg, 'anthropic', 'other')).to.be.greaterThanOrEqual(before.other + 6);
    expect(await droppedCount(tg, 'openai', 'chatgpt-account-id')).to.equal(before.account + 1);
    const { body } = await tg.gateway.metrics.scrape();
    expect(body, 'no label for a name outside the table').to.not.contain('header="anthropic-admin-key"');
  });

  describe('the cloud providers', () => {
    let cloud: CloudSetup;

    before(async () => {
      cloud = await startCloudGateway();
    });
    after(async () => cloud?.stop());

    it('vertex: only anthropic-beta of the Anthropic headers, as Vertex reads it', async () => {
      expect(await post(cloud.tg.url, '/v1/messages', cloud.tg.key, { ...MESSAGES, model: 'claude-vertex' })).to.equal(200);
      const [upstream] = cloud.vertex.requests;
      expectOnlyTableHeaders('vertex', upstream.headers);
      expect(upstream.headers['anthropic-beta']).to.equal('prompt-caching-2024-07-31');
      expect(upstream.headers).to.not.have.property('anthropic-version');
    });

    it('bedrock: no Anthropic header at all (betas go into the body), and the signature still holds', async () => {
      expect(await post(cloud.tg.url, '/v1/messages', cloud.tg.key, { ...MESSAGES, model: 'claude-bedrock' })).to.equal(200);
      const [upstream] = cloud.bedrock.requests;
      expectOnlyTableHeaders('bedrock', upstream.headers);
      expect(upstream.headers).to.not.have.property('anthropic-beta');
      expect(upstream.headers.accept).to.equal('application/json');
      expect(upstream.signatureValid).to.equal(true);
      expect((JSON.parse(upstream.body.toString('utf8')) as { anthropic_beta?: unknown }).anthropic_beta).to.deep.equal(['prompt-caching-2024-07-31']);
    });

    it('azure (openai with an api-key header): the openai table', async () => {
      expect(await post(cloud.tg.url, '/v1/chat/completions', cloud.tg.key, { ...CHAT, model: 'gpt-azure' })).to.equal(200);
      const [upstream] = cloud.fake.requests;
      const { 'api-key': key, ...rest } = upstream.headers;
      expect(key).to.be.a('string');
      expectOnlyTableHeaders('openai', rest);
    });
  });
});
