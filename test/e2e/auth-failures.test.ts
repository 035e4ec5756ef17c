/**
 * Key guessing is slowed down: past `plugins.auth.failures_per_minute` wrong keys, an address gets 429
 * before any key is looked up, in the endpoint's own shape.
 */
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

describe('e2e: wrong-key limit per client address', () => {
  let tg: TestGateway;

  before(async () => {
    tg = await startTestGateway({
      yaml: `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  echo: { protocol: echo }
models:
  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }
plugins:
  auth: { failures_per_minute: 3 }
`,
    });
  });

  after(async () => tg?.stop());

  function ask(key: string): Promise<Response> {
    return fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tollgate-echo', messages: [{ role: 'user', content: 'hi' }] }),
    });
  }

  it('answers 401 to the first wrong keys, then 429 with retry-after, to any key it does not already know as valid', async () => {
    const valid = await ask(tg.key);
    expect(valid.status).to.equal(200);
    for (let i = 0; i < 3; i++) expect((await ask(`sk-${'x'.repeat(48)}`)).status).to.equal(401);
    const limited = await ask(`sk-${'y'.repeat(48)}`);
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    expect(((await limited.json()) as { error: { code: string } }).error.code).to.equal('too_many_invalid_keys');
    expect((await ask(`sk-${'z'.repeat(48)}`)).status, 'the address waits, whatever unknown key it sends').to.equal(429);
    // Issue 15: the address may be a NAT shared with honest clients; a key already found valid (cached)
    // still gets in, with no store lookup, so the limit does not lock them out.
    expect((await ask(tg.key)).status, 'a key known as valid is not locked out').to.equal(200);
  });
});
