/**
 * Traces against a local OTLP/HTTP receiver (JSON): one server span per request continuing the
 * client's traceparent, one client span per upstream attempt (a failover as siblings), the GenAI
 * attributes and Tollgate's own, and no content or key anywhere in what is exported. Off by default,
 * the incoming trace context still reaches the provider.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { unitsToNano } from '../../src/billing/money';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { parseSamples, sampleValue } from '../helpers/prometheus';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { anthropicError, anthropicMessage, anthropicStream } from '../helpers/upstream-replies';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: unknown };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status?: { code?: number };
  events?: { name: string }[];
}

/** Collects every span POSTed to /v1/traces, and the raw bodies (to look for what must never be in them). */
class OtlpReceiver {
  readonly spans: OtlpSpan[] = [];
  readonly bodies: string[] = [];
  readonly contentTypes: string[] = [];
  readonly tokens: string[] = [];
  private constructor(readonly server: Server, readonly url: string) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | null = null;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        receiver!.contentTypes.push(req.headers['content-type'] ?? '');
        receiver!.tokens.push(String(req.headers['x-collector-token']));
        receiver!.bodies.push(body);
        const parsed = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const resource of parsed.resourceSpans) for (const scope of resource.scopeSpans) receiver!.spans.push(...scope.spans);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`);
    return receiver;
  }

  async waitFor(count: number, timeoutMs = 5000): Promise<OtlpSpan[]> {
    const until = Date.now() + timeoutMs;
    while (this.spans.length < count && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    return this.spans;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function attr(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const value = span.attributes.find((attribute) => attribute.key === key)?.value;
  if (value === undefined) return undefined;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
}

const PROMPT = 'Tell me the secret plan for the harbour';
const REPLY = 'The plan is written on the lighthouse wall';

function yaml(aUrl: string, bUrl: string, telemetry: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
${telemetry}
providers:
  a: { protocol: anthropic, base_url: ${aUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  b: { protocol: anthropic, base_url: ${bUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
models:
  claude-ha:
    family: anthropic
    routes: [{ provider: a, priority: 0, upstream_model: claude-up-a }, { provider: b, priority: 1, upstream_model: claude-up-b }]
    price: { input: 1, output: 5 }
    max_output_tokens: 4096
    context_window: 200000
plugins:
  billing: { flush_interval_ms: 10 }
  upstream:
    failover: { max_attempts: 2, backoff_base_ms: 1, backoff_max_ms: 5 }
`;
}

interface Setup {
  readonly a: FakeUpstream;
  readonly b: FakeUpstream;
  readonly store: Store;
  readonly gateway: Gateway;
  readonly accountId: string;
  readonly keyId: string;
  readonly key: string;
}

async function setup(telemetry: string, env: Record<string, string> = {}): Promise<Setup> {
  const a = await startFakeUpstream();
  const b = await startFakeUpstream();
  const store = openStore({ url: 'sqlite::memory:' });
  await store.migrate();
  const account = await store.createAccount({ name: 'traced', role: 'user' });
  await store.credit({ accountId: account.id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'funds' });
  const { key, record } = await issueApiKey(store, { accountId: account.id, name: null });
  const config = parseConfig(yaml(a.url, b.url, telemetry), 'tracing.yaml', {});
  const gateway = await startGateway({ config, port: 0, store, logger: pino({ level: 'silent' }), env });
  return { a, b, store, gateway, accountId: account.id, keyId: record.id, key };
}

async function teardown(s: Setup | undefined): Promise<void> {
  await s?.gateway.stop(500);
  await s?.store.close();
  await s?.a.close();
  await s?.b.close();
}

function ask(s: Setup, headers: Record<string, string> = {}, stream = false): Promise<Response> {
  return fetch(`${s.gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': s.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'claude-ha', max_tokens: 50, stream, messages: [{ role: 'user', content: PROMPT }] }),
  });
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const SERVER = 2;
const CLIENT = 3;

describe('telemetry: OpenTelemetry traces', function () {
  this.timeout(20_000);

  describe('exported to an OTLP/HTTP receiver', () => {
    let receiver: OtlpReceiver;
    let s: Setup;
    let spans: OtlpSpan[];

    before(async () => {
      receiver = await OtlpReceiver.start();
      s = await setup(`telemetry: { traces: { endpoint: "${receiver.url}", headers: { x-collector-token: tok-1 } } }`, { OTEL_BSP_SCHEDULE_DELAY: '50' });
      // A failover: a answers 503, b serves; the client sent its own trace context.
      s.a.enqueue(anthropicError(503, 'api_error', 'unavailable'));
      s.b.enqueue(anthropicMessage({ text: REPLY, inputTokens: 20, outputTokens: 7 }));
      const res = await ask(s, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' });
      expect(res.status).to.equal(200);
      expect(await res.text()).to.include(REPLY);
      spans = await receiver.waitFor(3);
    });

    after(async () => {
      await teardown(s);
      await receiver.close();
    });

    it('sends JSON with the configured headers', () => {
      expect(receiver.contentTypes[0]).to.match(/^application\/json/);
      expect(receiver.tokens[0]).to.equal('tok-1');
    });

    it('continues the client\'s trace with one server span and one client span per attempt, the failover as siblings', () => {
      expect(spans).to.have.length(3);
      const server = spans.find((span) => span.kind === SERVER)!;
      const clients = spans.filter((span) => span.kind === CLIENT).sort((x, y) => Number(attr(x, 'tollgate.attempt')) - Number(attr(y, 'tollgate.attempt')));
      expect(server.traceId).to.equal(CLIENT_TRACE);
      expect(server.parentSpanId).to.equal(CLIENT_SPAN);
      expect(clients).to.have.length(2);
      for (const client of clients) {
        expect(client.traceId).to.equal(CLIENT_TRACE);
        expect(client.parentSpanId).to.equal(server.spanId);
      }
      expect(clients.map((client) => attr(client, 'tollgate.provider.id'))).to.deep.equal(['a', 'b']);
    });

    it('forwards traceparent (the attempt\'s span as parent) and tracestate to each provider', () => {
      const clients = spans.filter((span) => span.kind === CLIENT);
      const sent = [s.a.requests[0].headers, s.b.requests[0].headers];
      for (const [index, headers] of sent.entries()) {
        const client = clients.find((span) => attr(span, 'tollgate.provider.id') === ['a', 'b'][index])!;
        expect(headers.traceparent).to.equal(`00-${CLIENT_TRACE}-${client.spanId}-01`);
        expect(headers.tracestate).to.equal('vendor=abc');
      }
    });

    it('names and describes the server span in the GenAI conventions, with Tollgate\'s account, key, cost and usage source', () => {
      const server = spans.find((span) => span.kind === SERVER)!;
      expect(server.name).to.equal('chat claude-ha');
      expect(attr(server, 'gen_ai.operation.name')).to.equal('chat');
      expect(attr(server, 'gen_ai.provider.name')).to.equal('anthropic');
      expect(attr(server, 'gen_ai.request.model')).to.equal('claude-ha');
      expect(attr(server, 'gen_ai.response.model')).to.equal('claude-up-b');
      expect(attr(server, 'gen_ai.request.max_tokens')).to.equal(50);
      expect(attr(server, 'gen_ai.usage.input_tokens')).to.equal(20);
      expect(attr(server, 'gen_ai.usage.output_tokens')).to.equal(7);
      expect(attr(server, 'tollgate.account.id')).to.equal(s.accountId);
      expect(attr(server, 'tollgate.key.id')).to.equal(s.keyId);
      expect(attr(server, 'tollgate.cost')).to.equal('0.000055');
      expect(attr(server, 'tollgate.usage.source')).to.equal('upstream');
      expect(attr(server, 'http.response.status_code')).to.equal(200);
      expect(attr(server, 'tollgate.attempts')).to.equal(2);
      expect(BigInt(server.endTimeUnixNano) > BigInt(server.startTimeUnixNano)).to.equal(true);
    });

    it('marks the failed attempt and describes the one that answered', () => {
      const [failed, answered] = spans.filter((span) => span.kind === CLIENT).sort((x, y) => Number(attr(x, 'tollgate.attempt')) - Number(attr(y, 'tollgate.attempt')));
      expect(failed.name).to.equal('chat claude-up-a');
      expect(attr(failed, 'error.type')).to.equal('status_503');
      expect(attr(failed, 'http.response.status_code')).to.equal(503);
      expect(failed.status?.code).to.equal(2);
      expect(answered.name).to.equal('chat claude-up-b');
      expect(attr(answered, 'gen_ai.provider.name')).to.equal('anthropic');
      expect(attr(answered, 'gen_ai.request.model')).to.equal('claude-up-b');
      expect(attr(answered, 'server.address')).to.equal('127.0.0.1');
      expect(attr(answered, 'gen_ai.usage.input_tokens')).to.equal(20);
      expect(attr(answered, 'gen_ai.usage.output_tokens')).to.equal(7);
      expect(attr(answered, 'error.type')).to.equal(undefined);
    });

    it('exports no prompt, no completion and no key (the tracestate travels as the trace context it is)', () => {
      const exported = receiver.bodies.join('\n');
      for (const secret of [PROMPT, REPLY, s.key, PROVIDER_KEYS.anthropic]) expect(exported).to.not.include(secret);
    });

    it('starts a trace of its own for a client that sent none, and traces a stream until its last byte', async () => {
      const before = receiver.spans.length;
      s.a.enqueue(anthropicStream({ inputTokens: 30, outputTokens: 9 }));
      const res = await ask(s, {}, true);
      expect(await res.text()).to.include('message_stop');
      const all = await receiver.waitFor(before + 2);
      const fresh = all.slice(before);
      const server = fresh.find((span) => span.kind === SERVER)!;
      const client = fresh.find((span) => span.kind === CLIENT)!;
      expect(server.parentSpanId ?? '').to.equal('');
      expect(server.traceId).to.not.equal(CLIENT_TRACE);
      expect(client.parentSpanId).to.equal(server.spanId);
      expect(attr(client, 'gen_ai.usage.output_tokens')).to.equal(9);
      expect(attr(client, 'tollgate.outcome')).to.equal('delivered');
      expect(attr(server, 'tollgate.stream')).to.equal(true);
      expect(s.a.requests.at(-1)!.headers.traceparent).to.equal(`00-${server.traceId}-${client.spanId}-01`);
    });

    it('traces a request refused before any upstream, without client spans', async () => {
      const before = receiver.spans.length;
      const res = await fetch(`${s.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'sk-not-a-real-key', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-ha', max_tokens: 5, messages: [{ role: 'user', content: PROMPT }] }),
      });
      expect(res.status).to.equal(401);
      const [span] = (await receiver.waitFor(before + 1)).slice(before);
      expect(span.kind).to.equal(SERVER);
      expect(attr(span, 'error.type')).to.equal('TOLLGATE_ERR_AUTH_INVALID_KEY');
      expect(attr(span, 'http.response.status_code')).to.equal(401);
    });
  });

  describe('off by default', () => {
    let s: Setup;
    before(async () => {
      s = await setup('');
    });
    after(async () => teardown(s));

    it('forwards a well-formed incoming traceparent and tracestate unchanged, and drops a malformed one', async () => {
      s.a.enqueue(anthropicMessage());
      s.a.enqueue(anthropicMessage());
      s.a.enqueue(anthropicMessage());
      await (await ask(s, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' })).text();
      await (await ask(s, { traceparent: '00-zz-not-a-trace' })).text();
      await (await ask(s)).text();
      expect(s.a.requests[0].headers.traceparent).to.equal(`00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`);
      expect(s.a.requests[0].headers.tracestate).to.equal('vendor=abc');
      expect(s.a.requests[1].headers.traceparent).to.equal(undefined);
      expect(s.a.requests[2].headers.traceparent).to.equal(undefined);
    });
  });

  describe('a collector that does not answer', () => {
    it('never slows or fails a request; spans that cannot go out are dropped and counted', async () => {
      // A port nothing listens on: every export fails fast.
      const closed = await OtlpReceiver.start();
      await closed.close();
      const s = await setup('', { OTEL_EXPORTER_OTLP_ENDPOINT: closed.url.replace('/v1/traces', ''), OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_BSP_MAX_QUEUE_SIZE: '2', OTEL_EXPORTER_OTLP_TIMEOUT: '500' });
      try {
        for (let index = 0; index < 5; index++) s.a.enqueue(anthropicMessage());
        const answers = await Promise.all(Array.from({ length: 5 }, () => ask(s).then(async (res) => ({ status: res.status, text: await res.text() }))));
        expect(answers.map((answer) => answer.status)).to.deep.equal([200, 200, 200, 200, 200]);
        let dropped: { full: number; failed: number } = { full: 0, failed: 0 };
        for (let tries = 0; tries < 200 && dropped.full + dropped.failed < 10; tries++) {
          const samples = parseSamples(await (await fetch(`${s.gateway.url}/metrics`)).text());
          dropped = {
            full: sampleValue(samples, 'tollgate_trace_spans_dropped_total', { reason: 'queue_full' }) ?? 0,
            failed: sampleValue(samples, 'tollgate_trace_spans_dropped_total', { reason: 'export_failed' }) ?? 0,
          };
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        // Ten spans (a server and a client span per request): each either overflowed the queue of two or failed to export.
        expect(dropped.full + dropped.failed).to.equal(10);
        expect(dropped.full).to.be.above(0);
      } finally {
        await teardown(s);
      }
    });
  });
});
