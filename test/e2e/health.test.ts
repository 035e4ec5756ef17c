/**
 * GET /healthz and GET /readyz: health while the process answers; readiness while the store and the
 * balance book answer, 503 naming what failed when they do not, and 503 from the first moment of a
 * shutdown, while a stream is still being served.
 */
import { connect } from 'node:net';
import { expect } from 'chai';
import pino from 'pino';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicStream } from '../helpers/upstream-replies';

interface Readiness {
  status: string;
  checks: Record<string, string>;
  failed?: string[];
}

async function readyz(url: string): Promise<{ status: number; body: Readiness; requestId: string | null }> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness, requestId: res.headers.get('x-request-id') };
}

/**
 * Sends a request on a connection opened earlier, whose head was started before `between` ran: a
 * connection with a request under way is not closed by a shutdown, so this is how a probe that
 * arrives during the drain can be scripted without timing.
 */
async function splitRequest(port: number, path: string, between: () => void): Promise<{ status: number; body: string }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
  // Let the server see the start of the request before `between` runs.
  await new Promise((resolve) => setTimeout(resolve, 50));
  between();
  socket.write('Connection: close\r\n\r\n');
  await ended;
  const text = Buffer.concat(chunks).toString('utf8');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}

describe('e2e: /healthz and /readyz', () => {
  describe('a healthy gateway', () => {
    let tg: TestGateway;
    before(async () => (tg = await startTestGateway()));
    after(async () => tg?.stop());

    it('answers /healthz 200 {"status":"ok"} with an x-request-id, without an API key', async () => {
      const res = await fetch(`${tg.url}/healthz`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ status: 'ok' });
      expect(res.headers.get('x-request-id')).to.match(/^req_/);
    });

    it('answers /readyz 200 with each check', async () => {
      const { status, body, requestId } = await readyz(tg.url);
      expect(status).to.equal(200);
      expect(body).to.deep.equal({ status: 'ready', checks: { config: 'ok', store: 'ok', billing: 'ok' } });
      expect(requestId).to.match(/^req_/);
    });

    it('turns away other methods with 405', async () => {
      const res = await fetch(`${tg.url}/readyz`, { method: 'POST' });
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal('GET, HEAD');
    });
  });

  describe('when the store is unreachable', () => {
    it('answers 503 naming the store (and billing, whose book is the store) once the store is closed; /healthz stays 200', async () => {
      const tg = await startTestGateway();
      try {
        expect((await readyz(tg.url)).status).to.equal(200);
        await tg.store.close();
        const { status, body } = await readyz(tg.url);
        expect(status).to.equal(503);
        expect(body.status).to.equal('unready');
        expect(body.checks).to.deep.include({ config: 'ok', store: 'failed', billing: 'failed' });
        expect(body.failed).to.have.members(['store', 'billing']);
        expect((await fetch(`${tg.url}/healthz`)).status).to.equal(200);
      } finally {
        await tg.gateway.stop(200);
      }
    });

    it('answers 503 for a PostgreSQL store on a port nobody listens on', async () => {
      const store = openStore({ url: 'postgres://tollgate@127.0.0.1:1/tollgate', connect_timeout_ms: 300 });
      const config = parseConfig(defaultTestYaml('http://127.0.0.1:9'), 'dead-pg.yaml', {});
      let gateway: Gateway | undefined;
      try {
        gateway = await startGateway({ config, port: 0, store, logger: pino({ level: 'silent' }) });
        const { status, body } = await readyz(gateway.url);
        expect(status).to.equal(503);
        expect(body.checks.store).to.equal('failed');
        expect(body.failed).to.include('store');
      } finally {
        await gateway?.stop(200);
        await store.close();
      }
    });
  });

  describe('when the balance book (Redis) is unreachable', () => {
    it('answers 503 naming billing while the store is fine', async () => {
      const yaml = defaultTestYaml('http://127.0.0.1:9').replace('store:', 'redis: { url: "redis://127.0.0.1:1", command_timeout_ms: 200 }\nstore:');
      const tg = await startTestGateway({ yaml });
      try {
        const { status, body } = await readyz(tg.url);
        expect(status).to.equal(503);
        expect(body.checks).to.deep.include({ config: 'ok', store: 'ok', billing: 'failed' });
        expect(body.failed).to.deep.equal(['billing']);
      } finally {
        await tg.stop();
      }
    });
  });

  describe('during shutdown', () => {
    let fake: FakeUpstream;
    let tg: TestGateway;

    before(async () => {
      fake = await startFakeUpstream();
      tg = await startTestGateway({ upstreamUrl: fake.url });
    });

    after(async () => {
      await fake?.close();
      await tg?.store.close();
    });

    it('answers /readyz 503 at once while a stream is still being served, and the stream completes', async () => {
      const events = anthropicStream({ text: 'still streaming during the drain' }).events;
      fake.enqueue({ status: 200, events: [...events.slice(0, 3), { pauseMs: 300 }, ...events.slice(3)] });
      const stream = fetch(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Go' }] }),
      }).then((res) => res.text());
      await fake.waitForRequests(1);
      expect((await readyz(tg.url)).status).to.equal(200);

      let stopped: Promise<void> | undefined;
      const probe = await splitRequest(tg.gateway.port, '/readyz', () => (stopped = tg.gateway.stop(5000)));
      expect(probe.status).to.equal(503);
      expect(JSON.parse(probe.body)).to.deep.equal({ status: 'unready', checks: { shutdown: 'stopping' }, failed: ['shutdown'] });

      expect(await stream).to.include('event: message_stop');
      await stopped;
    });
  });
});
