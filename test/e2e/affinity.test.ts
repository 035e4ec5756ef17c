/**
 * Session affinity end to end: three Anthropic routes of equal weight at one priority level. The
 * requests of one session (x-claude-code-session-id) all go to one route; when it fails they move
 * together to one other; different sessions still spread; the cache-hit ratio is exposed per model
 * and provider.
 */
import { expect } from 'chai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicMessage } from '../helpers/upstream-replies';

const ROUTES = ['one', 'two', 'three'] as const;

describe('e2e: session affinity', () => {
  const fakes = new Map<string, FakeUpstream>();
  let tg: TestGateway;

  before(async () => {
    for (const name of ROUTES) fakes.set(name, await startFakeUpstream());
    const providers = ROUTES.map((name) => `  ${name}:\n    protocol: anthropic\n    base_url: ${fakes.get(name)!.url}\n    api_key: key-${name}-0123456789`).join('\n');
    tg = await startTestGateway({
      yaml: `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
${providers}
models:
  claude-pooled:
    family: anthropic
    routes: [{ provider: one }, { provider: two }, { provider: three }]
    failover: { max_attempts: 3, backoff_base_ms: 1, backoff_max_ms: 5 }
    free: true
plugins:
  auth: { failures_per_minute: 0 }
  upstream: { breaker: { enabled: false } }
`,
    });
  });

  after(async () => {
    for (const fake of fakes.values()) await fake.close().catch(() => undefined);
    await tg?.stop();
  });

  /** Sends one request of `session`; resolves with the route that answered it. */
  async function send(session: string): Promise<string> {
    const response = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': tg.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-claude-code-session-id': session },
      body: JSON.stringify({ model: 'claude-pooled', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] }),
    });
    expect(response.status).to.equal(200);
    await response.arrayBuffer();
    const counts = ROUTES.map((name) => fakes.get(name)!.requests.length);
    const answered = ROUTES.filter((name) => fakes.get(name)!.requests.length > 0 && fakes.get(name)!.requests.at(-1)!.headers['x-claude-code-session-id'] === session);
    for (const fake of fakes.values()) fake.reset();
    expect(counts.reduce((a, b) => a + b, 0), 'requests upstream').to.be.greaterThan(0);
    return answered.at(-1)!;
  }

  it('sends 100 requests of one session to one of three equal routes, and moves them together when it fails', async () => {
    const first = new Set<string>();
    for (let i = 0; i < 100; i++) first.add(await send('session-A'));
    expect(first.size).to.equal(1);
    const [home] = first;

    await fakes.get(home)!.close();
    const moved = new Set<string>();
    for (let i = 0; i < 100; i++) moved.add(await send('session-A'));
    expect(moved.size).to.equal(1);
    expect(moved.has(home)).to.equal(false);

    // The routes still up keep spreading other sessions (three sessions on one route: 1 in 2^29).
    const spread = new Set<string>();
    for (let i = 0; i < 30; i++) spread.add(await send(`session-${i}`));
    expect(spread.size).to.equal(2);
    expect(spread.has(home)).to.equal(false);
  });

  it('exposes the prompt-cache hit ratio per model and provider', async () => {
    // One request whose prompt is mostly read from the cache: 30 input, 10 written, 60 read.
    const reply = anthropicMessage({ inputTokens: 30 });
    const body = reply.json as { usage: Record<string, number> };
    body.usage.cache_creation_input_tokens = 10;
    body.usage.cache_read_input_tokens = 60;
    for (const fake of fakes.values()) fake.enqueue(reply);
    const answered = await send('session-cache');
    for (const fake of fakes.values()) fake.reset();
    const metrics = await (await fetch(`${tg.url}/metrics`)).text();
    const line = metrics.split('\n').find((text) => text.startsWith(`tollgate_prompt_cache_hit_ratio{model="claude-pooled",provider="${answered}"}`));
    expect(line, metrics.split('\n').filter((text) => text.includes('cache_hit')).join('\n')).to.not.equal(undefined);
    expect(Number(line!.split(' ').at(-1))).to.be.greaterThan(0).and.lessThan(1);
  });
});
