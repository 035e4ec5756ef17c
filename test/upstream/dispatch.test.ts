/**
 * Failover in one request, with scripted providers in process (no sockets): which routes are tried in
 * which order, what the client gets, that nothing is retried once a byte reached the client, and that
 * a session follows the route that answered. End-to-end failover over HTTP is in test/e2e/failover.test.ts.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { parseConfig } from '../../src/config/load';
import type { AffinityConfig, FailoverPolicy, GatewayConfig } from '../../src/config/types';
import type { ExchangeOutcome, GatewayContext, GatewayState } from '../../src/kernel/context';
import { EndpointContext } from '../../src/http/endpoint-context';
import { GatewayError } from '../../src/kernel/errors';
import { requestReach } from '../../src/protocols/request-reach';
import { ENDPOINTS } from '../../src/protocols/types';
import { LocalAffinityStore } from '../../src/routing/affinity';
import { ProviderBreakers } from '../../src/upstream/breakers';
import { dispatch, type DispatchDeps } from '../../src/upstream/dispatch';
import { PASSTHROUGH } from '../../src/upstream/passthrough';
import { RetryBudget } from '../../src/upstream/retry-budget';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../../src/upstream/types';

/** a, b and c at priorities 0, 1, 2 (a fixed order); s1 and s2 share a level, for session affinity. */
const CONFIG: GatewayConfig = parseConfig(
  [
    'providers:',
    ...['a', 'b', 'c', 's1', 's2'].map((id) => `  ${id}: { protocol: anthropic, base_url: "http://${id}.invalid", api_key: k-${id} }`),
    'models:',
    '  claude-x:',
    '    family: anthropic',
    '    free: true',
    '    routes: [{ provider: a }, { provider: b, priority: 1 }, { provider: c, priority: 2 }]',
    '  claude-two:',
    '    family: anthropic',
    '    free: true',
    '    routes: [{ provider: a }, { provider: b, priority: 1 }]',
    '  claude-pair:',
    '    family: anthropic',
    '    free: true',
    '    routes: [{ provider: s1 }, { provider: s2 }]',
    '',
  ].join('\n'),
  'gateway.yaml',
  {},
);

const POLICY: FailoverPolicy = {
  max_attempts: 3,
  retry_on: ['connect_error', 'reset', 'timeout', 429, 500, 502, 503, 504, 529],
  backoff_base_ms: 1,
  backoff_max_ms: 5,
  deadline_ms: 10_000,
};

const AFFINITY: AffinityConfig = { enabled: true, key: 'header', header: 'x-claude-code-session-id', max_entries: 100, ttl_ms: 60_000 };

const MESSAGE = '{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}';
const FIRST_EVENT = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3,"output_tokens":0}}}\n\n';

/** What one scripted provider does with one attempt. */
type Reply =
  | { readonly json: number; readonly body?: string; readonly headers?: Record<string, string> }
  | { readonly stream: string[] }
  /** A stream whose first event goes out, then breaks: the break comes after the commit. */
  | { readonly streamThenBreak: string }
  | { readonly transport: string };

function response(reply: Reply): Promise<UpstreamResponse> {
  if ('transport' in reply) return Promise.reject(Object.assign(new Error(`connect ${reply.transport}`), { code: reply.transport }));
  if ('json' in reply) {
    return Promise.resolve({ status: reply.json, headers: { 'content-type': 'application/json', ...reply.headers }, body: Readable.from([Buffer.from(reply.body ?? MESSAGE)]) });
  }
  const headers = { 'content-type': 'text/event-stream' };
  if ('stream' in reply) return Promise.resolve({ status: 200, headers, body: Readable.from(reply.stream.map((chunk) => Buffer.from(chunk))) });
  const body = new PassThrough();
  body.write(reply.streamThenBreak);
  // Breaks once the relay asks for more: by then the answer is committed and its head sent.
  body.once('resume', () => setImmediate(() => body.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))));
  return Promise.resolve({ status: 200, headers, body });
}

/** Providers that answer from their scripts in turn, recording which were called. */
function scripted(scripts: Record<string, Reply[]>, calls: string[]): Map<string, UpstreamClient> {
  return new Map(
    Object.keys(CONFIG.providers).map((id) => {
      const left = [...(scripts[id] ?? [])];
      const client: UpstreamClient = {
        provider: CONFIG.providers[id],
        send(request: UpstreamRequest) {
          calls.push(id);
          const reply = left.shift();
          if (reply === undefined) throw new Error(`provider ${id} was called more often than scripted (${request.path})`);
          return response(reply);
        },
        close: () => Promise.resolve(),
      };
      return [id, client];
    }),
  );
}

function contextFor(model: string, stream: boolean, headers: Record<string, string> = {}): GatewayContext {
  const body = { model, max_tokens: 16, stream, messages: [{ role: 'user', content: 'hello' }] };
  const raw = Buffer.from(JSON.stringify(body));
  const req = new IncomingMessage(new Socket());
  req.method = 'POST';
  req.url = '/v1/messages';
  req.headers = { 'content-type': 'application/json', ...headers };
  const start = raw.indexOf(model) - 1;
  const state: GatewayState = {
    requestId: 'req_test',
    clientRequestId: null,
    config: CONFIG,
    endpoint: ENDPOINTS.messages,
    request: { raw, body, model: CONFIG.models[model], stream, modelSpan: [start, start + model.length + 2], reach: requestReach('messages', body, raw) },
  };
  // The context the endpoint listener runs the chain on.
  return new EndpointContext(req, new ServerResponse(req), state, CONFIG.server);
}

function readAll(body: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    body.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    body.once('end', () => resolve(text));
    body.once('error', reject);
  });
}

interface Run {
  readonly calls: string[];
  /** The status the client got, or the error code the kernel would render. */
  readonly answer: number | string;
  readonly sent: string;
  readonly outcome: ExchangeOutcome;
}

async function run(deps: DispatchDeps, calls: string[], ctx: GatewayContext): Promise<Run> {
  let answer: number | string;
  try {
    await dispatch(ctx, deps);
    answer = ctx.status;
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    answer = error.code;
  }
  const sent = ctx.body instanceof Readable ? await readAll(ctx.body) : Buffer.isBuffer(ctx.body) ? ctx.body.toString('utf8') : '';
  return { calls: [...calls], answer, sent, outcome: await ctx.state.exchange!.finished };
}

describe('upstream/dispatch', () => {
  const breakersMade: ProviderBreakers[] = [];
  function depsWith(clients: Map<string, UpstreamClient>, overrides: Partial<DispatchDeps> = {}): DispatchDeps {
    const breakers = new ProviderBreakers({ enabled: true, error_threshold_percent: 50, volume_threshold: 2, reset_timeout_ms: 60_000, rolling_window_ms: 10_000 }, pino({ level: 'silent' }));
    breakersMade.push(breakers);
    return {
      clients,
      breakers,
      retryBudget: new RetryBudget(100, 10),
      failover: POLICY,
      // Every provider here speaks Messages, the client's protocol.
      routeFor: () => PASSTHROUGH,
      affinity: null,
      ...overrides,
    };
  }
  afterEach(() => {
    for (const breakers of breakersMade.splice(0)) breakers.shutdown();
  });

  describe('which routes are tried, and what the client gets', () => {
    const cases: ReadonlyArray<{
      name: string;
      model?: string;
      stream?: boolean;
      scripts: Record<string, Reply[]>;
      expected: { calls: string[]; answer: number | string; end: ExchangeOutcome['end']['kind']; provider: string | null };
    }> = [
      {
        name: 'the first route answers',
        scripts: { a: [{ json: 200 }] },
        expected: { calls: ['a'], answer: 200, end: 'delivered', provider: 'a' },
      },
      {
        name: 'a 503 moves on to the next priority level',
        scripts: { a: [{ json: 503, body: '{"type":"error","error":{"type":"api_error","message":"down"}}' }], b: [{ json: 200 }] },
        expected: { calls: ['a', 'b'], answer: 200, end: 'delivered', provider: 'b' },
      },
      {
        name: 'a refused connection moves on',
        scripts: { a: [{ transport: 'ECONNREFUSED' }], b: [{ json: 200 }] },
        expected: { calls: ['a', 'b'], answer: 200, end: 'delivered', provider: 'b' },
      },
      {
        name: 'a 400 is relayed, not retried',
        scripts: { a: [{ json: 400, body: '{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}' }] },
        expected: { calls: ['a'], answer: 400, end: 'failed', provider: 'a' },
      },
      {
        name: "a 401 (the gateway's key) is not retried and not relayed",
        scripts: { a: [{ json: 401 }] },
        expected: { calls: ['a'], answer: 'TOLLGATE_ERR_UPSTREAM_AUTH', end: 'failed', provider: 'a' },
      },
      {
        name: 'a reply that is not JSON is invalid, and retried',
        scripts: { a: [{ json: 200, body: '<html>' }], b: [{ json: 200 }] },
        expected: { calls: ['a', 'b'], answer: 200, end: 'delivered', provider: 'b' },
      },
      {
        name: 'max_attempts bounds the attempts; the last failure is relayed',
        scripts: { a: [{ json: 500 }], b: [{ json: 502 }], c: [{ json: 503 }] },
        expected: { calls: ['a', 'b', 'c'], answer: 503, end: 'failed', provider: 'c' },
      },
      {
        name: 'with fewer routes than attempts, the order starts over',
        model: 'claude-two',
        scripts: { a: [{ json: 503 }, { json: 200 }], b: [{ json: 503 }] },
        expected: { calls: ['a', 'b', 'a'], answer: 200, end: 'delivered', provider: 'a' },
      },
      {
        name: "the providers' 429s become a 503 that says they are overloaded",
        scripts: { a: [{ json: 429, headers: { 'retry-after': '7' } }], b: [{ json: 429 }], c: [{ json: 429 }] },
        expected: { calls: ['a', 'b', 'c'], answer: 'TOLLGATE_ERR_UPSTREAM_OVERLOADED', end: 'failed', provider: 'c' },
      },
      {
        name: 'a stream whose first event is an overloaded error moves on before anything is sent',
        stream: true,
        scripts: { a: [{ stream: ['event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"x"}}\n\n'] }], b: [{ stream: [FIRST_EVENT] }] },
        expected: { calls: ['a', 'b'], answer: 200, end: 'delivered', provider: 'b' },
      },
      {
        name: 'a stream whose first event is a client error is not retried',
        stream: true,
        scripts: { a: [{ stream: ['event: error\ndata: {"type":"error","error":{"type":"invalid_request_error","message":"x"}}\n\n'] }] },
        expected: { calls: ['a'], answer: 'TOLLGATE_ERR_UPSTREAM_ERROR', end: 'failed', provider: 'a' },
      },
      {
        name: 'a stream that ends before its first event is invalid, and retried',
        stream: true,
        scripts: { a: [{ stream: [': ping\n\n'] }], b: [{ stream: [FIRST_EVENT] }] },
        expected: { calls: ['a', 'b'], answer: 200, end: 'delivered', provider: 'b' },
      },
      {
        name: 'a stream that breaks after its first byte reached the client is never retried',
        stream: true,
        scripts: { a: [{ streamThenBreak: FIRST_EVENT }] },
        expected: { calls: ['a'], answer: 200, end: 'failed', provider: 'a' },
      },
    ];

    for (const { name, model = 'claude-x', stream = false, scripts, expected } of cases) {
      it(name, async () => {
        const calls: string[] = [];
        const result = await run(depsWith(scripted(scripts, calls)), calls, contextFor(model, stream));
        expect({ calls: result.calls, answer: result.answer, end: result.outcome.end.kind, provider: result.outcome.provider }).to.deep.equal(expected);
      });
    }

    it('sends the client the head of a broken stream, then an error event, and counts the break against the provider', async () => {
      const calls: string[] = [];
      const deps = depsWith(scripted({ a: [{ streamThenBreak: FIRST_EVENT }] }, calls));
      const result = await run(deps, calls, contextFor('claude-x', true));
      expect(result.sent.startsWith(FIRST_EVENT)).to.equal(true);
      expect(result.sent.slice(FIRST_EVENT.length)).to.match(/^event: error\n/);
      expect(deps.breakers.health('a').failures).to.equal(1);
    });

    it('skips a provider whose breaker is open without spending an attempt', async () => {
      const calls: string[] = [];
      const deps = depsWith(scripted({ b: [{ json: 503 }], c: [{ json: 503 }] }, calls), { failover: { ...POLICY, max_attempts: 2 } });
      for (let i = 0; i < 2; i++) await deps.breakers.run('a', () => Promise.reject(new Error('down'))).catch(() => undefined);
      expect(deps.breakers.state('a')).to.equal('open');
      const result = await run(deps, calls, contextFor('claude-x', false));
      expect(result.calls).to.deep.equal(['b', 'c']);
      expect(result.outcome.attemptLog.map((entry) => entry.outcome)).to.deep.equal(['breaker_open', 'status_503', 'status_503']);
    });
  });

  describe('session affinity', () => {
    const SESSION = { 'x-claude-code-session-id': 'conversation-1' };

    /** s1 and s2 answer 200, but 503 while in `down`. */
    function switchable(down: ReadonlySet<string>, calls: string[]): Map<string, UpstreamClient> {
      return new Map(
        ['s1', 's2'].map((id) => {
          const client: UpstreamClient = {
            provider: CONFIG.providers[id],
            send() {
              calls.push(id);
              return response(down.has(id) ? { json: 503 } : { json: 200 });
            },
            close: () => Promise.resolve(),
          };
          return [id, client];
        }),
      );
    }

    it('sends a session back to the route that answered it, and moves it with a failover', async () => {
      const calls: string[] = [];
      const down = new Set<string>();
      const store = new LocalAffinityStore(10, 60_000);
      const deps = depsWith(switchable(down, calls), { affinity: { config: AFFINITY, store } });
      const send = async () => {
        calls.length = 0;
        return (await run(deps, calls, contextFor('claude-pair', false, SESSION))).calls;
      };

      // s1 and s2 share a level: the draw picks the first request's route, which becomes the session's home.
      const [home] = await send();
      const other = home === 's1' ? 's2' : 's1';
      for (let i = 0; i < 5; i++) expect(await send(), 'the same session, the same route').to.deep.equal([home]);

      down.add(home);
      expect(await send(), 'the home fails: the request moves on').to.deep.equal([home, other]);
      down.delete(home);
      expect(await send(), 'the session moved with it').to.deep.equal([other]);
      expect(store.size, 'one session, one entry').to.equal(1);
    });

    it('leaves a request without a session to the weighted draw', async () => {
      const calls: string[] = [];
      const store = new LocalAffinityStore(10, 60_000);
      const deps = depsWith(switchable(new Set(), calls), { affinity: { config: AFFINITY, store } });
      await run(deps, calls, contextFor('claude-pair', false));
      expect(store.size).to.equal(0);
    });
  });
});
