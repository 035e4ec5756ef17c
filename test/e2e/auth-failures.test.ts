/**
 * Key guessing is slowed down: past `plugins.auth.failures_per_minute` wrong keys, an address gets 429
 * before any key is looked up, in the endpoint's own shape. A key store that fails a lookup is neither
 * a wrong key nor the gateway's fault: 503 auth_unavailable, retried by the SDKs.
 */
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

const YAML = `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  echo: { protocol: echo }
models:
  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }
plugins:
  auth: { failures_per_minute: 3 }
`;

function ask(tg: TestGateway, key: string): Promise<Response> {
  return fetch(`${tg.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tollgate-echo', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('e2e: wrong-key limit per client address', () => {
  let tg: TestGateway;

  before(async () => {
    tg = await startTestGateway({ yaml: YAML });
  });

  after(async () => tg?.stop());

  it('answers 401 to the first wrong keys, then 429 with retry-after, to any key it does not already know as valid', async () => {
    const valid = await ask(tg, tg.key);
    expect(valid.status).to.equal(200);
    for (let i = 0; i < 3; i++) expect((await ask(tg, `sk-${'x'.repeat(48)}`)).status).to.equal(401);
    const limited = await ask(tg, `sk-${'y'.repeat(48)}`);
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    expect(((await limited.json()) as { error: { code: string } }).error.code).to.equal('too_many_invalid_keys');
    expect((await ask(tg, `sk-${'z'.repeat(48)}`)).status, 'the address waits, whatever unknown key it sends').to.equal(429);
    // Issue 15: the address may be a NAT shared with honest clients; a key already found valid (cached)
    // still gets in, with no store lookup, so the limit does not lock them out.
    expect((await ask(tg, tg.key)).status, 'a key known as valid is not locked out').to.equal(200);
  });
});

describe('e2e: the key store fails during a lookup', () => {
  let tg: TestGateway;

  before(async () => {
    tg = await startTestGateway({ yaml: YAML });
  });

  after(async () => tg?.stop());

  it('answers 503 auth_unavailable with retry-after, not a 401 or a 500, while the key store fails, and counts no wrong key', async () => {
    const { key } = await tg.createKey();
    const findKeyByHash = tg.store.findKeyByHash.bind(tg.store);
    tg.store.findKeyByHash = () => Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    try {
      for (let i = 0; i < 4; i++) {
        const refused = await ask(tg, key);
        expect(refused.status).to.equal(503);
        expect(refused.headers.get('retry-after')).to.equal('1');
        const { error } = (await refused.json()) as { error: { code: string; message: string } };
        expect(error.code).to.equal('auth_unavailable');
        expect(error.message).to.not.include('administrator');
      }
      const anthropic = await fetch(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'tollgate-echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(anthropic.status).to.equal(503);
      expect(((await anthropic.json()) as { error: { type: string } }).error.type).to.equal('api_error');
    } finally {
      tg.store.findKeyByHash = findKeyByHash;
    }
    // Four failed lookups are past failures_per_minute (3), but none was a wrong key: no 429.
    expect((await ask(tg, key)).status, 'the key works once the store answers').to.equal(200);
  });

  it('keeps serving a key it has seen through the outage, stale cache entry and all; a key it never saw gets 503', async () => {
    const { key: seen } = await tg.createKey();
    expect((await ask(tg, seen)).status).to.equal(200);
    // Another key issued moves the key revision: the cached entry is no longer served without a lookup.
    const { key: unseen } = await tg.createKey();
    const findKeyByHash = tg.store.findKeyByHash.bind(tg.store);
    tg.store.findKeyByHash = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    try {
      for (let i = 0; i < 3; i++) expect((await ask(tg, seen)).status, 'a key confirmed before the outage').to.equal(200);
      const refused = await ask(tg, unseen);
      expect(refused.status).to.equal(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal('auth_unavailable');
    } finally {
      tg.store.findKeyByHash = findKeyByHash;
    }
  });
});
