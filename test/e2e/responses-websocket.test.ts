/**
 * WebSocket mode of /v1/responses end to end: frames run as streamed POSTs (one exact charge per
 * response, on either family), the handshake's key check, `generate: false`, previous_response_id
 * continued from what Tollgate kept, one response at a time, the frame size limit, a client that
 * leaves mid-response, idle sockets' memory, and 426 where the operator turned the mode off.
 */
import { expect } from 'chai';
import WebSocket from 'ws';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicStream, responsesStream } from '../helpers/upstream-replies';

const MAX_BODY_BYTES = 65536;

function socketYaml(upstreamUrl: string, extra = ''): string {
  const price = '{ input: 1, cache_write: 1.25, cache_hit: 0.1, output: 5 }';
  return `
version: 1
server: { host: 127.0.0.1, max_body_bytes: ${MAX_BODY_BYTES}, shutdown_unready_ms: 0${extra} }
store: { url: "sqlite::memory:" }
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  claude-priced: { family: anthropic, routes: [{ provider: anthropic }], price: ${price}, max_output_tokens: 1000, context_window: 200000 }
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: ${price}, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 1 } }
`;
}

type Event = Record<string, unknown> & { type: string };

/** A client of the socket: sends frames, reads events in order. */
class Client {
  readonly events: Event[] = [];
  private waiters: (() => void)[] = [];
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.events.push(JSON.parse((data as Buffer).toString("utf8")) as Event);
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      this.wake();
    });
  }

  static open(url: string, key: string): Promise<Client> {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}` } });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Client(ws)));
      ws.once('error', reject);
    });
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  send(body: Record<string, unknown>): void {
    this.ws.send(JSON.stringify({ type: 'response.create', ...body }));
  }

  /** Waits for an event matching `done` after index `from`; returns the events from `from` to it. */
  async until(done: (event: Event) => boolean, from = 0): Promise<Event[]> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const at = this.events.slice(from).findIndex(done);
      if (at !== -1) return this.events.slice(from, from + at + 1);
      if (this.closed !== null || Date.now() > deadline) throw new Error(`no such event; got ${this.events.slice(from).map((e) => e.type).join(', ')} ${JSON.stringify(this.closed)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  /** Sends a frame and waits for its last event (completed or error). */
  async create(body: Record<string, unknown>): Promise<Event[]> {
    const from = this.events.length;
    this.send(body);
    return this.until((event) => event.type === 'response.completed' || event.type === 'error', from);
  }

  async waitClosed(): Promise<{ code: number; reason: string }> {
    await this.until(() => false).catch(() => undefined);
    if (this.closed === null) throw new Error('the socket is still open');
    return this.closed;
  }
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('e2e: /v1/responses over WebSocket', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  async function charges(count: number): Promise<ChargeRecord[]> {
    return waitFor(
      () => tg.store.listCharges({ accountId: tg.accountId, limit: 1000 }),
      (list) => list.length >= count,
    );
  }

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: socketYaml(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
  });

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  it('runs 20 sequential responses on one socket as 20 exact charges', async () => {
    for (let i = 0; i < 20; i++) fake.enqueue(responsesStream({ text: `Answer ${i}.`, inputTokens: 100, outputTokens: 10 }));
    const client = await Client.open(tg.url, tg.key);
    for (let i = 0; i < 20; i++) {
      const events = await client.create({ model: 'gpt-priced', input: `Question ${i}`, store: false });
      const last = events.at(-1)!;
      expect(last.type, JSON.stringify(last)).to.equal('response.completed');
      expect(events.map((event) => event.type)).to.include('response.output_text.delta');
      expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')).to.equal(`Answer ${i}.`);
    }
    const list = await charges(20);
    expect(list).to.have.length(20);
    for (const charge of list) expect(charge).to.deep.include({ cost: 150_000n, inputTokens: 100, outputTokens: 10, outcome: 'delivered', endpoint: 'responses' });
    expect(new Set(list.map((charge) => charge.requestId)).size).to.equal(20);
    const balance = await waitFor(() => tg.store.balance(tg.accountId), (value) => value.held === 0n);
    expect(balance).to.deep.equal({ balance: unitsToNano('10') - 20n * 150_000n, held: 0n });
    // Every frame reached the upstream as a streamed POST of its own body, the frame's type left out.
    expect(fake.requests).to.have.length(20);
    const sent = fake.requests[0].json() as Record<string, unknown>;
    expect(sent).to.deep.include({ model: 'gpt-priced', input: 'Question 0', stream: true });
    expect(sent).to.not.have.property('type');
    client.ws.close();
  });

  it('answers a Claude model through translation, one charge per response', async () => {
    fake.enqueue(anthropicStream({ text: 'From Claude.', inputTokens: 100, outputTokens: 10 }));
    const client = await Client.open(tg.url, tg.key);
    const events = await client.create({ model: 'claude-priced', input: 'Hi' });
    expect(events.at(-1)!.type).to.equal('response.completed');
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')).to.equal('From Claude.');
    const [charge] = await charges(1);
    expect(charge).to.deep.include({ cost: 150_000n, model: 'claude-priced', provider: 'anthropic' });
    client.ws.close();
  });

  it('warms up with generate: false for nothing, then continues from it and from each response', async () => {
    fake.enqueue(responsesStream({ text: 'First.', inputTokens: 100, outputTokens: 10 }), responsesStream({ text: 'Second.', inputTokens: 100, outputTokens: 10 }));
    const client = await Client.open(tg.url, tg.key);
    const system = { type: 'message', role: 'developer', content: 'Be brief.' };
    const warm = await client.create({ model: 'gpt-priced', input: [system], store: false, generate: false });
    expect(warm.map((event) => event.type)).to.deep.equal(['response.created', 'response.completed']);
    const warmId = (warm[1].response as { id: string }).id;
    expect(fake.requests).to.have.length(0);

    const user = { type: 'message', role: 'user', content: 'Hello' };
    const first = await client.create({ model: 'gpt-priced', input: [user], previous_response_id: warmId, store: false });
    const firstResponse = first.at(-1)!.response as { id: string; output: unknown[] };
    const sentFirst = fake.requests[0].json() as Record<string, unknown>;
    expect(sentFirst).to.not.have.property('previous_response_id');
    expect(sentFirst.input).to.deep.equal([system, user]);

    const next = { type: 'message', role: 'user', content: 'Again' };
    await client.create({ model: 'gpt-priced', input: [next], previous_response_id: firstResponse.id, store: false });
    const sentSecond = fake.requests[1].json() as Record<string, unknown>;
    expect(sentSecond.input).to.deep.equal([system, user, ...firstResponse.output, next]);
    // Two charges: the warm-up cost nothing and called nothing.
    const list = await charges(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await tg.store.listCharges({ accountId: tg.accountId, limit: 1000 })).to.have.length(2);
    expect(list.every((charge) => charge.cost === 150_000n)).to.equal(true);
    client.ws.close();
  });

  it('refuses a second response.create while one runs, and keeps the socket', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    fake.enqueue({ until: gate, then: responsesStream({ text: 'Slow.', inputTokens: 100, outputTokens: 10 }) });
    const client = await Client.open(tg.url, tg.key);
    client.send({ model: 'gpt-priced', input: 'one' });
    await fake.waitForRequests(1);
    const refused = await client.create({ model: 'gpt-priced', input: 'two' });
    expect(refused).to.have.length(1);
    expect(refused[0]).to.deep.include({ type: 'error', status: 400 });
    expect(refused[0].error).to.deep.include({ code: 'response_in_progress', type: 'invalid_request_error' });
    release();
    await client.until((event) => event.type === 'response.completed');
    expect(client.closed).to.equal(null);
    expect(fake.requests).to.have.length(1);
    client.ws.close();
  });

  it('sends a refusal as an error frame in the endpoint shape and keeps the socket open', async () => {
    const client = await Client.open(tg.url, tg.key);
    const [unknown] = await client.create({ model: 'no-such-model', input: 'x' });
    expect(unknown).to.deep.include({ type: 'error', status: 404 });
    expect(unknown.error).to.deep.include({ code: 'model_not_found', param: 'model' });
    client.ws.send('not json');
    const [bad] = await client.until((event) => event.type === 'error', 1);
    expect(bad.error).to.deep.include({ code: 'invalid_event' });
    fake.enqueue(responsesStream({ text: 'Still here.', inputTokens: 1, outputTokens: 1 }));
    const events = await client.create({ model: 'gpt-priced', input: 'x' });
    expect(events.at(-1)!.type).to.equal('response.completed');
    client.ws.close();
  });

  it('answers a frame over the size limit with an error frame, then closes with 1009', async () => {
    const client = await Client.open(tg.url, tg.key);
    client.send({ model: 'gpt-priced', input: 'x'.repeat(MAX_BODY_BYTES + 10) });
    const [error] = await client.until((event) => event.type === 'error');
    expect(error).to.deep.include({ status: 413 });
    expect(error.error).to.deep.include({ code: 'request_too_large' });
    expect((await client.waitClosed()).code).to.equal(1009);
    expect(fake.requests).to.have.length(0);
  });

  it('refuses a handshake without a valid key with 401, as a POST would be', async () => {
    const ws = new WebSocket(`${tg.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-wrong' } });
    const status = await new Promise<number>((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('the socket opened')));
      ws.once('error', () => undefined);
    });
    expect(status).to.equal(401);
  });

  it('charges a client that leaves mid-response for what was delivered', async () => {
    const words = Array.from({ length: 10 }, (_, i) => `word${i} `);
    const stream = responsesStream({ text: words.join(''), inputTokens: 100, outputTokens: 40 });
    // The deltas, then a long pause before the end: the client leaves during it.
    const head = stream.events.filter((event) => !('data' in event) || !JSON.stringify(event.data).includes('"response.completed"') && !JSON.stringify(event.data).includes('.done"'));
    fake.enqueue({ status: 200, events: [...head, { pauseMs: 5000 }] });
    const client = await Client.open(tg.url, tg.key);
    client.send({ model: 'gpt-priced', input: 'Talk.' });
    await client.until((event) => event.type === 'response.output_text.delta' && String(event.delta).includes('word9'));
    client.ws.terminate();
    await fake.waitForClose(0);
    const [charge] = await charges(1);
    // The upstream never reported usage: input is counted from the request, output from what was relayed.
    expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'aborted' });
    expect(charge.inputTokens).to.be.above(0);
    expect(charge.outputTokens).to.be.within(10, 30);
    expect(charge.cost).to.equal(BigInt(charge.inputTokens) * 1000n + BigInt(charge.outputTokens) * 5000n);
    expect((await waitFor(() => tg.store.balance(tg.accountId), (value) => value.held === 0n)).held).to.equal(0n);
  });

  it('holds 200 idle sockets in under 40 MiB', async () => {
    global.gc?.();
    const before = process.memoryUsage();
    const clients: Client[] = [];
    for (let i = 0; i < 200; i++) clients.push(await Client.open(tg.url, tg.key));
    global.gc?.();
    const after = process.memoryUsage();
    // Both ends live in this process, so this counts the clients' sockets too; the resident size, so
    // a collection in between cannot hide what the sockets hold.
    const grown = after.rss - before.rss;
    console.log(`      200 idle sockets: ${(grown / 1048576).toFixed(1)} MiB (both ends)`);
    expect(grown, `grew ${(grown / 1048576).toFixed(1)} MiB`).to.be.below(40 * 1024 * 1024);
    for (const client of clients) client.ws.terminate();
  });
});

describe('e2e: /v1/responses over WebSocket, turned off', () => {
  it('answers the upgrade with 426, so clients fall back to HTTP', async () => {
    const fake = await startFakeUpstream();
    const tg = await startTestGateway({ yaml: socketYaml(fake.url, ', websocket: false') });
    try {
      const ws = new WebSocket(`${tg.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${tg.key}` } });
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += String(chunk)));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.once('open', () => reject(new Error('the socket opened')));
        ws.once('error', () => undefined);
      });
      expect(answer.status).to.equal(426);
      expect(JSON.parse(answer.body).error).to.deep.include({ code: 'websocket_not_supported' });
      // A POST still works.
      const res = await fetch(`${tg.url}/v1/responses`, { method: 'GET', headers: { authorization: `Bearer ${tg.key}` } });
      expect(res.status).to.equal(405);
    } finally {
      await fake.close();
      await tg.stop();
    }
  });
});
