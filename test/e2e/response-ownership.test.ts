/**
 * Response ownership on native OpenAI Responses routes (`responses.own_ids_only`): an account may name
 * in `previous_response_id` or `conversation` only what Tollgate relayed to it; anything else (another
 * account's response, a made-up id) is the 400 `previous_response_not_found` the translated route
 * gives, before the provider is called. Plain and streamed, over HTTP and a WebSocket frame; with the
 * option off, every reference passes as sent. On the embedded store and on PostgreSQL + Redis.
 */
import { expect } from 'chai';
import WebSocket from 'ws';
import { onEachBackend, type Backend } from '../helpers/backends';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { responsesObject, responsesStream } from '../helpers/upstream-replies';

function yamlFor(upstreamUrl: string, backend: Backend, ownIdsOnly?: boolean): string {
  return `
version: 1
server: { host: 127.0.0.1, shutdown_unready_ms: 0 }
${backend.sections}
${ownIdsOnly === undefined ? '' : `responses: { own_ids_only: ${ownIdsOnly} }`}
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  upstream: { failover: { max_attempts: 1 } }
`;
}

interface Answer {
  readonly status: number;
  readonly json: Record<string, unknown> & { error?: Record<string, unknown> };
}

onEachBackend((backend) => `e2e: response ownership on native Responses routes, on ${backend}`, 'response ownership', (backendOf) => {
  let fake: FakeUpstream;
  let tg: TestGateway;
  /** Another account's key. */
  let other: string;
  let otherAccount: string;

  async function start(ownIdsOnly?: boolean): Promise<void> {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url, backendOf(), ownIdsOnly), storeFromConfig: true });
    const account = await tg.store.createAccount({ name: `ownership-other-${Date.now()}`, role: 'user' });
    otherAccount = account.id;
    other = (await tg.createKey({ accountId: account.id })).key;
  }

  afterEach(async () => {
    await tg?.stop();
    await fake?.close();
  });

  async function post(key: string, body: Record<string, unknown>): Promise<Answer> {
    const response = await fetch(`${tg.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, json: body.stream === true && response.ok ? {} : (JSON.parse(text) as Answer['json']) };
  }

  /** A response relayed to the test's own account, its id returned once the store has it. */
  async function relayed(id: string, stream = false): Promise<string> {
    fake.enqueue(stream ? responsesStream({ id }) : responsesObject({ id }));
    const answer = await post(tg.key, { model: 'gpt-test', input: 'Hi', stream });
    expect(answer.status).to.equal(200);
    const deadline = Date.now() + 5000;
    while (!(await tg.store.relayedResponses.relayedTo(tg.accountId, { kind: 'response', id })) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await tg.store.relayedResponses.relayedTo(tg.accountId, { kind: 'response', id }), 'recorded in the store').to.equal(true);
    return id;
  }

  function expectNotFound(answer: Answer, param: string, id: string): void {
    expect(answer.status, JSON.stringify(answer.json)).to.equal(400);
    expect(answer.json.error).to.deep.include({ type: 'invalid_request_error', code: 'previous_response_not_found', param });
    expect(String(answer.json.error?.message)).to.include(`'${id}'`);
  }

  describe('with responses.own_ids_only (the default)', () => {
    beforeEach(() => start());

    for (const stream of [false, true]) {
      it(`refuses another account's ${stream ? 'streamed' : 'plain'} response id with 400, forwarding nothing, and forwards the owner's`, async () => {
        const id = await relayed(`resp_own_${stream ? 's' : 'p'}_${Date.now()}`, stream);
        fake.reset();
        expectNotFound(await post(other, { model: 'gpt-test', input: 'Next', previous_response_id: id }), 'previous_response_id', id);
        expect(fake.requests, 'nothing reached the provider').to.have.length(0);

        fake.enqueue(responsesObject());
        const own = await post(tg.key, { model: 'gpt-test', input: 'Next', previous_response_id: id });
        expect(own.status, JSON.stringify(own.json)).to.equal(200);
        expect(fake.requests).to.have.length(1);
        expect((fake.requests[0].json() as Record<string, unknown>).previous_response_id, 'forwarded as sent').to.equal(id);
      });
    }

    it('refuses a response id Tollgate never relayed', async () => {
      expectNotFound(await post(tg.key, { model: 'gpt-test', input: 'Next', previous_response_id: 'resp_made_up' }), 'previous_response_id', 'resp_made_up');
      expect(fake.requests).to.have.length(0);
    });

    it("refuses another account's conversation, as a string or an object, and forwards the owner's", async () => {
      await tg.store.relayedResponses.record(otherAccount, [{ kind: 'conversation', id: 'conv_theirs' }], new Date());
      await tg.store.relayedResponses.record(tg.accountId, [{ kind: 'conversation', id: 'conv_mine' }], new Date());
      expectNotFound(await post(tg.key, { model: 'gpt-test', input: 'Hi', conversation: 'conv_theirs' }), 'conversation', 'conv_theirs');
      expectNotFound(await post(tg.key, { model: 'gpt-test', input: 'Hi', conversation: { id: 'conv_theirs' } }), 'conversation', 'conv_theirs');
      expect(fake.requests, 'nothing reached the provider').to.have.length(0);
      fake.enqueue(responsesObject());
      const own = await post(tg.key, { model: 'gpt-test', input: 'Hi', conversation: 'conv_mine' });
      expect(own.status, JSON.stringify(own.json)).to.equal(200);
      expect((fake.requests[0].json() as Record<string, unknown>).conversation).to.equal('conv_mine');
    });

    it("refuses another account's response id on a WebSocket frame with an error frame, forwarding nothing", async () => {
      const id = await relayed(`resp_ws_${Date.now()}`);
      fake.reset();
      const ws = new WebSocket(`${tg.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${other}` } });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      try {
        const event = new Promise<Record<string, unknown>>((resolve) => ws.once('message', (data) => resolve(JSON.parse((data as Buffer).toString('utf8')) as Record<string, unknown>)));
        ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-test', input: 'Next', previous_response_id: id }));
        const answer = await event;
        expect(answer).to.deep.include({ type: 'error', status: 400 });
        expect(answer.error).to.deep.include({ code: 'previous_response_not_found', param: 'previous_response_id' });
        expect(fake.requests, 'nothing reached the provider').to.have.length(0);
      } finally {
        ws.close();
      }
    });
  });

  describe('with responses.own_ids_only: false', () => {
    beforeEach(() => start(false));

    it("forwards another account's response id as sent, as before", async () => {
      fake.enqueue(responsesObject({ id: 'resp_before' }));
      expect((await post(tg.key, { model: 'gpt-test', input: 'Hi' })).status).to.equal(200);
      fake.reset();
      fake.enqueue(responsesObject());
      const answer = await post(other, { model: 'gpt-test', input: 'Next', previous_response_id: 'resp_before' });
      expect(answer.status, JSON.stringify(answer.json)).to.equal(200);
      expect((fake.requests[0].json() as Record<string, unknown>).previous_response_id).to.equal('resp_before');
    });
  });
});
