/**
 * Failover, retries, the commit point, circuit breakers and timeouts, against two scripted fake
 * upstreams A and B serving one model (A first). Timeouts and breaker windows are short so the suite
 * stays fast.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicError, anthropicMessage, anthropicStream } from '../helpers/upstream-replies';

interface Setup {
  readonly a: FakeUpstream;
  readonly b: FakeUpstream;
  readonly tg: TestGateway;
}

function yaml(aUrl: string, bUrl: string, breaker = '{ volume_threshold: 4, error_threshold_percent: 50, reset_timeout_ms: 400 }'): string {
  const timeouts = '{ connect_ms: 500, first_byte_ms: 400, idle_ms: 400 }';
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  a: { protocol: anthropic, base_url: ${aUrl}, api_key: ${PROVIDER_KEYS.anthropic}, timeouts: ${timeouts} }
  b: { protocol: anthropic, base_url: ${bUrl}, api_key: ${PROVIDER_KEYS.anthropic}, timeouts: ${timeouts} }
models:
  claude-ha:
    family: anthropic
    routes: [{ provider: a, priority: 0 }, { provider: b, priority: 1 }]
    price: { input: 1, output: 5 }
    max_output_tokens: 4096
    context_window: 200000
  claude-a-only:
    family: anthropic
    routes: [{ provider: a }]
    free: true
plugins:
  billing: { flush_interval_ms: 10 }
  upstream:
    failover: { max_attempts: 3, backoff_base_ms: 1, backoff_max_ms: 20, deadline_ms: 2000 }
    breaker: ${breaker}
`;
}

async function setup(breaker?: string, aUrl?: string): Promise<Setup> {
  const a = await startFakeUpstream();
  const b = await startFakeUpstream();
  const tg = await startTestGateway({ yaml: yaml(aUrl ?? a.url, b.url, breaker) });
  await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('100'), kind: 'admin', actor: 'test', note: 'funds' });
  return { a, b, tg };
}

async function teardown({ a, b, tg }: Setup): Promise<void> {
  await a.close();
  await b.close();
  await tg.stop();
}

function ask(tg: TestGateway, options: { stream?: boolean; model?: string } = {}): Promise<Response> {
  return fetch(`${tg.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: options.model ?? 'claude-ha', max_tokens: 50, stream: options.stream === true, messages: [{ role: 'user', content: 'Hi' }] }),
  });
}

describe('e2e: failover and circuit breakers', () => {
  describe('failover before the commit point', () => {
    let s: Setup;
    beforeEach(async () => (s = await setup()));
    afterEach(async () => teardown(s));

    for (const [label, step] of [
      ['503', anthropicError(503, 'api_error', 'unavailable')],
      ['529 overloaded', anthropicError(529, 'overloaded_error', 'Overloaded')],
      ['a reset connection', { reset: true as const }],
      ['a hang past the first-byte timeout', { hang: true as const }],
    ] as const) {
      it(`answers from B when A gives ${label} (plain)`, async () => {
        s.a.enqueue(step);
        s.b.enqueue(anthropicMessage({ text: 'From B.' }));
        const res = await ask(s.tg);
        expect(res.status).to.equal(200);
        expect(((await res.json()) as { content: Array<{ text: string }> }).content[0].text).to.equal('From B.');
        expect(s.a.requests).to.have.length(1);
        expect(s.b.requests).to.have.length(1);
      });
    }

    it('answers a stream from B when A fails, with nothing from A reaching the client', async () => {
      s.a.enqueue(anthropicError(529, 'overloaded_error', 'Overloaded'));
      s.b.enqueue(anthropicStream({ text: 'Streamed from B.' }));
      const anthropic = new Anthropic({ baseURL: s.tg.url, apiKey: s.tg.key, maxRetries: 0 });
      const message = await anthropic.messages.stream({ model: 'claude-ha', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] }).finalMessage();
      expect(message.content).to.have.length(1);
      expect(message.content[0]).to.deep.include({ type: 'text', text: 'Streamed from B.' });
    });

    it('fails over when A answers 200 with a stream whose first event is an error', async () => {
      s.a.enqueue({ status: 200, events: [{ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] });
      s.b.enqueue(anthropicStream({ text: 'Clean answer.' }));
      const res = await ask(s.tg, { stream: true });
      const text = await res.text();
      expect(res.status).to.equal(200);
      expect(text).to.include('event: message_stop').and.not.include('Overloaded');
      expect(s.b.requests).to.have.length(1);
    });

    it('does not retry a 400: the client gets A\'s error unchanged and B is never asked', async () => {
      s.a.enqueue(anthropicError(400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'));
      const res = await ask(s.tg);
      expect(res.status).to.equal(400);
      expect(await res.text()).to.include('prompt is too long');
      expect(s.b.requests).to.have.length(0);
    });

    it('relays the last error when every attempt fails, after trying each route', async () => {
      s.a.enqueue(anthropicError(503, 'api_error', 'A down'), anthropicError(503, 'api_error', 'A down again'));
      s.b.enqueue(anthropicError(503, 'api_error', 'B down'));
      const res = await ask(s.tg);
      expect(res.status).to.equal(503);
      expect(s.a.requests.length + s.b.requests.length).to.equal(3);
      expect(s.b.requests).to.have.length(1);
    });

    it('after 3 events and a reset, the client gets the 3 events and one error event, billed as partial, never retried', async function () {
      // Its waits have wide bounds (a loaded machine); the suite's 10 s would cut them short.
      this.timeout(30_000);
      const reply = anthropicStream({ text: 'one two three four five six seven eight nine ten', inputTokens: 40 });
      s.a.enqueue({ ...reply, events: reply.events.slice(0, 5), thenReset: true });
      const res = await ask(s.tg, { stream: true });
      const text = await res.text();
      expect(res.status).to.equal(200);
      const events = [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1]);
      expect(events.slice(0, 4)).to.deep.equal(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
      expect(events.at(-1)).to.equal('error');
      expect(events).to.not.include('message_stop');
      expect(s.b.requests).to.have.length(0);
      const requestId = res.headers.get('x-request-id')!;
      // A partial charge counts the streamed output first, in the tokenizer's worker thread, which
      // loads its encoder on first use: about a second alone, several on a loaded machine. Waited for
      // with a wide bound, not a fixed number of polls.
      let charge: ChargeRecord | undefined;
      const deadline = Date.now() + 15_000;
      while (charge === undefined && Date.now() < deadline) {
        charge = (await s.tg.store.listCharges({ accountId: s.tg.accountId })).find((c) => c.requestId === requestId);
        if (charge === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(charge, `the charge of ${requestId} within 15 s`).to.not.equal(undefined);
      expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'failed', inputTokens: 40, provider: 'a' });
      expect(charge!.outputTokens).to.be.above(0);
    });

    it('a slow attempt times out alone: other requests to A in flight finish normally', async () => {
      s.a.enqueue({ hang: true }, { delayMs: 100, then: anthropicMessage({ text: 'ok 1' }) }, { delayMs: 100, then: anthropicMessage({ text: 'ok 2' }) });
      s.b.enqueue(anthropicMessage({ text: 'B took over' }));
      const [slow, fast1, fast2] = await Promise.all([ask(s.tg, { model: 'claude-ha' }), ask(s.tg), ask(s.tg)]);
      expect([slow.status, fast1.status, fast2.status]).to.deep.equal([200, 200, 200]);
      const texts = await Promise.all([slow, fast1, fast2].map(async (res) => ((await res.json()) as { content: Array<{ text: string }> }).content[0].text));
      expect(texts.sort()).to.deep.equal(['B took over', 'ok 1', 'ok 2']);
      expect(s.a.requests.filter((request) => request.closedAt !== null)).to.have.length(1);
    });

    it('ends a stream that stalls past the idle timeout with an error event, and does not retry it', async () => {
      const events = anthropicStream({ text: 'words that stop flowing' }).events;
      s.a.enqueue({ status: 200, events: [...events.slice(0, 4), { pauseMs: 2000 }, ...events.slice(4)] });
      const started = Date.now();
      const res = await ask(s.tg, { stream: true });
      const text = await res.text();
      expect(Date.now() - started).to.be.below(1500);
      expect(text).to.include('event: content_block_delta').and.include('event: error').and.not.include('event: message_stop');
      expect(s.b.requests).to.have.length(0);
      expect(await s.a.waitForClose(0)).to.be.a('number');
    });

    it('does not cut a healthy stream that outlasts the first-byte timeout and the deadline', async function () {
      this.timeout(10_000);
      const events = anthropicStream({ text: 'a long and steady answer that keeps flowing' }).events;
      // Events every 300 ms (under the 400 ms idle timeout) for ~2.7 s, past the 2 s deadline.
      const paced = events.flatMap((event) => [event, { pauseMs: 300 }]);
      s.a.enqueue({ status: 200, events: paced });
      const res = await ask(s.tg, { stream: true });
      const text = await res.text();
      expect(text).to.include('event: message_stop').and.not.include('event: error');
      expect(s.b.requests).to.have.length(0);
    });
  });

  describe('retry budget', () => {
    it('caps retries across requests when a provider fails for everyone', async () => {
      const a = await startFakeUpstream();
      const b = await startFakeUpstream();
      const budgetYaml = yaml(a.url, b.url, '{ enabled: false }').replace(
        'failover: { max_attempts: 3, backoff_base_ms: 1, backoff_max_ms: 20, deadline_ms: 2000 }',
        'failover: { max_attempts: 3, backoff_base_ms: 1, backoff_max_ms: 20, deadline_ms: 2000 }\n    retry_budget: { percent: 20, min_retries: 1 }',
      );
      const tg = await startTestGateway({ yaml: budgetYaml });
      try {
        // Every attempt is slow and fails, so the 20 requests overlap while they retry.
        for (let i = 0; i < 60; i++) a.enqueue({ delayMs: 100, then: anthropicError(503, 'api_error', 'down') });
        const statuses = await Promise.all(Array.from({ length: 20 }, () => ask(tg, { model: 'claude-a-only' }).then((res) => res.status)));
        expect(statuses.every((status) => status === 503)).to.equal(true);
        // Without a budget: 60 attempts. With 20% of 20 requests (4) retrying at most at once: far fewer.
        expect(a.requests.length).to.be.within(20, 32);
      } finally {
        await a.close();
        await b.close();
        await tg.stop();
      }
    });
  });

  describe('connection refused', () => {
    let s: Setup;
    before(async () => (s = await setup(undefined, 'http://127.0.0.1:1')));
    after(async () => teardown(s));

    it('moves to B at once when A refuses the connection', async () => {
      s.b.enqueue(anthropicMessage({ text: 'B answered.' }));
      const res = await ask(s.tg);
      expect(res.status).to.equal(200);
      expect(s.b.requests).to.have.length(1);
    });
  });

  describe('circuit breaker', () => {
    let s: Setup;
    beforeEach(async () => (s = await setup()));
    afterEach(async () => teardown(s));

    it('opens after its threshold, skips A, probes once after the reset timeout, closes on success', async () => {
      for (let i = 0; i < 4; i++) s.a.enqueue(anthropicError(500, 'api_error', 'boom'));
      for (let i = 0; i < 8; i++) s.b.enqueue(anthropicMessage({ text: `B${i}` }));
      for (let i = 0; i < 4; i++) expect((await ask(s.tg)).status).to.equal(200);
      expect(s.a.requests).to.have.length(4);
      // Open: A is skipped.
      for (let i = 0; i < 2; i++) expect((await ask(s.tg)).status).to.equal(200);
      expect(s.a.requests).to.have.length(4);

      await new Promise((resolve) => setTimeout(resolve, 450));
      s.a.enqueue(anthropicMessage({ text: 'A is back' }));
      const probes = await Promise.all([ask(s.tg), ask(s.tg)]);
      expect(probes.map((res) => res.status)).to.deep.equal([200, 200]);
      // Half-open lets exactly one request through to A; the other went to B.
      expect(s.a.requests).to.have.length(5);
      s.a.enqueue(anthropicMessage({ text: 'A again' }));
      expect((await ask(s.tg)).status).to.equal(200);
      expect(s.a.requests).to.have.length(6);
    });

    it('reopens when the probe fails', async () => {
      for (let i = 0; i < 5; i++) s.a.enqueue(anthropicError(500, 'api_error', 'boom'));
      for (let i = 0; i < 8; i++) s.b.enqueue(anthropicMessage({ text: 'B' }));
      for (let i = 0; i < 4; i++) await ask(s.tg);
      await new Promise((resolve) => setTimeout(resolve, 450));
      await ask(s.tg); // the probe fails: open again
      expect(s.a.requests).to.have.length(5);
      await ask(s.tg);
      expect(s.a.requests).to.have.length(5);
    });

    it('answers 503 at once with retry-after when every provider of the model is open', async () => {
      for (let i = 0; i < 4; i++) s.a.enqueue(anthropicError(500, 'api_error', 'boom'));
      for (let i = 0; i < 4; i++) await ask(s.tg, { model: 'claude-a-only' });
      const started = Date.now();
      const res = await ask(s.tg, { model: 'claude-a-only' });
      expect(Date.now() - started).to.be.below(200);
      expect(res.status).to.equal(503);
      expect(Number(res.headers.get('retry-after'))).to.be.within(1, 1);
      expect(s.a.requests).to.have.length(4);
    });

    it('does not count client errors against a provider', async () => {
      for (let i = 0; i < 6; i++) s.a.enqueue(anthropicError(400, 'invalid_request_error', 'bad'));
      for (let i = 0; i < 6; i++) expect((await ask(s.tg)).status).to.equal(400);
      s.a.enqueue(anthropicMessage({ text: 'still trusted' }));
      expect((await ask(s.tg)).status).to.equal(200);
      expect(s.a.requests).to.have.length(7);
      expect(s.b.requests).to.have.length(0);
    });
  });

  it('works the same for a chat client on the translated route', async () => {
    const s = await setup();
    try {
      s.a.enqueue(anthropicError(529, 'overloaded_error', 'Overloaded'));
      s.b.enqueue(anthropicMessage({ text: 'Translated from B.' }));
      const openai = new OpenAI({ baseURL: `${s.tg.url}/v1`, apiKey: s.tg.key, maxRetries: 0 });
      const completion = await openai.chat.completions.create({ model: 'claude-ha', messages: [{ role: 'user', content: 'Hi' }] });
      expect(completion.choices[0].message.content).to.equal('Translated from B.');
    } finally {
      await teardown(s);
    }
  });
});
