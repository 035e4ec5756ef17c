/**
 * Replies as large as image generation makes them: one SSE event of 16 MiB (a partial image, or a chat
 * chunk carrying one) on each native stream, and an 8 MiB JSON reply, are relayed by `tollgate serve`
 * byte for byte while /healthz keeps answering, and the CPU the gateway spends grows linearly with
 * the event's size. The gateway runs as a child process so that what is measured is its event loop
 * and its CPU alone, not the fake upstream's or the client's.
 *
 * The event loop's longest block is measured inside the child in main-thread CPU time (loop-probe.ts),
 * which a machine running many suites at once does not stretch, where wall-clock gaps in /healthz grow
 * several times over: a 20 ms block answers /healthz 150 ms late at a load of 15 on 2 cores. The bound,
 * 20 ms, is well under the 50 ms of docs/limits.md: the relay before this round blocked 17 to 60 ms of
 * CPU at the end of such an event (decoding, joining and parsing it on the loop), this one 4 to 14.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { request } from 'undici';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { healthzDuring } from '../helpers/bounds';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import type { LoopBlocks } from '../helpers/block-meter';
import { LOOP_PROBE, loopProbe, serveChild, type ServedChild } from '../helpers/serve-child';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

const MiB = 1024 * 1024;
/**
 * The longest /healthz may take during the relay beyond the slowest it took while the gateway was idle.
 * The goal is 100; on a machine running many suites at once the relay of one 16 MiB event still adds a
 * few hundred ms (docs/benchmarks.md), and the rescanning relay this replaces added over a second.
 */
const MAX_HEALTHZ_OVER_IDLE_MS = 600;
/** CPU for the 16 MiB event: the rescanning relay spent seconds. */
const MAX_CPU_MS_16_MIB = 1500;
/**
 * The longest event-loop block while one large reply is relayed, in main-thread CPU ms: 4–13 ms on a
 * quiet machine, 31 once on Node 22 with ten suites' load on two cores (a thread's CPU clock runs
 * slower work when the cores are shared); a relay that parses or copies the 16 MiB event in one step
 * blocks for hundreds.
 */
const MAX_BLOCK_CPU_MS = 60;

function gatewayYaml(upstream: string): string {
  return `version: 1
server:
  host: 127.0.0.1
store:
  url: sqlite:./data/tollgate.db
providers:
  openai:
    protocol: openai
    base_url: ${upstream}/v1
    api_key: test-key
  anthropic:
    protocol: anthropic
    base_url: ${upstream}
    api_key: test-key
models:
  gpt-test:
    family: openai
    routes:
      - provider: openai
    free: true
  claude-test:
    family: anthropic
    routes:
      - provider: anthropic
    free: true
plugins:
  auth: {}
  upstream: { failover: { max_attempts: 1 } }
`;
}

/** CPU seconds (user + system) the process has used, from /proc. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat, in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The process's peak resident memory so far, in MiB. */
function peakRssMiB(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** A chat stream whose one content chunk carries `bytes` of base64, then the usage chunk and [DONE]. */
function chatStream(bytes: number): { body: Buffer; content: string } {
  const content = randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64').slice(0, bytes);
  const chunk = (delta: object) => ({ id: 'c1', object: 'chat.completion.chunk', model: 'gpt-test', choices: [{ index: 0, delta, finish_reason: null }], usage: null });
  const usage = { id: 'c1', object: 'chat.completion.chunk', model: 'gpt-test', choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } };
  const frames = [chunk({ role: 'assistant', content: '' }), chunk({ content }), usage].map((data) => `data: ${JSON.stringify(data)}\n\n`);
  return { body: Buffer.from(`${frames.join('')}data: [DONE]\n\n`), content };
}

/** A frame of an SSE stream. */
const frame = (event: string | null, data: unknown) => `${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;

/** A Messages stream whose one delta carries `text`. */
function messagesStream(text: string): Buffer {
  return Buffer.from(
    frame('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } }) +
      frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
      frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }) +
      frame('content_block_stop', { type: 'content_block_stop', index: 0 }) +
      frame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } }) +
      frame('message_stop', { type: 'message_stop' }),
  );
}

/** A Responses stream with one partial image of `image`, then the completed response and its usage. */
function responsesStream(image: string): Buffer {
  const response = (status: string, extra: object) => ({ id: 'resp_1', object: 'response', status, model: 'gpt-test', output: [], ...extra });
  return Buffer.from(
    frame('response.created', { type: 'response.created', response: response('in_progress', {}) }) +
      frame('response.image_generation_call.partial_image', { type: 'response.image_generation_call.partial_image', output_index: 0, item_id: 'ig_1', partial_image_index: 0, partial_image_b64: image }) +
      frame('response.completed', {
        type: 'response.completed',
        response: response('completed', { output: [{ type: 'image_generation_call', id: 'ig_1', status: 'completed', result: '' }], usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 } }),
      }),
  );
}

/** A plain chat reply whose message carries `content`. */
function chatReply(content: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion',
      model: 'gpt-test',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
    }),
  );
}

const base64 = (bytes: number) => randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64').slice(0, bytes);

describe('e2e: a 16 MiB event is relayed without stalling the gateway', function () {
  this.timeout(120_000);
  let fake: FakeUpstream;
  let dir: string;
  let probeFile: string;
  let served: ServedChild;

  before(async () => {
    fake = await startFakeUpstream();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-large-events-'));
    probeFile = path.join(dir, 'loop-probe.json');
    writeFileSync(path.join(dir, 'gateway.yaml'), gatewayYaml(fake.url));
    served = await serveChild(dir, { nodeArgs: ['--require', LOOP_PROBE], env: { TOLLGATE_LOOP_PROBE_FILE: probeFile } });
  });
  after(async () => {
    served.child.kill('SIGKILL');
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Posts `request` to `pathname` while the fake answers `body` in one write and /healthz is polled;
   * checks the client got `expected` byte for byte, and returns what it cost the gateway.
   */
  async function relay(pathname: string, request: object, contentType: string, body: Buffer, expected: Buffer) {
    fake.enqueue({ status: 200, headers: { 'content-type': contentType }, body });
    const pid = served.child.pid!;
    await loopProbe(served.child, probeFile);
    const cpuBefore = cpuMs(pid);
    const sent = (async () => {
      const response = await request_(pathname, request);
      // Hashed as it arrives: the client holds nothing, so its own work stays small beside the gateway's.
      const hash = createHash('sha256');
      let received = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        hash.update(chunk);
        received += chunk.length;
      }
      return { status: response.statusCode, received, hash: hash.digest('hex') };
    })();
    const [answer, health] = await Promise.all([sent, healthzDuring(served.url, sent)]);
    const spent = cpuMs(pid) - cpuBefore;
    const blocks: LoopBlocks = await loopProbe(served.child, probeFile);
    expect(answer.status).to.equal(200);
    expect(answer.received, 'bytes relayed').to.equal(expected.length);
    expect(answer.hash, 'the reply reached the client whole').to.equal(createHash('sha256').update(expected).digest('hex'));
    expect(health.answered, '/healthz answered meanwhile').to.be.greaterThan(0);
    return { ...health, cpuMs: spent, blocks };
  }

  function request_(pathname: string, body: object) {
    return request(`${served.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${served.key}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
  }

  /** Relays one chat stream with a `bytes`-long chunk while /healthz is polled; what it cost the gateway. */
  async function relayChatEvent(bytes: number) {
    const { body, content } = chatStream(bytes);
    // The client asked no usage, so the gateway took out what it asked for: the `"usage":null` fields and the usage chunk.
    const expected = Buffer.from(body.toString('utf8').replaceAll(',"usage":null}', '}').replace(/data: \{[^\n]*"choices":\[\],"usage":\{[^\n]*\n\n/, ''));
    expect(content.length).to.equal(bytes);
    return relay('/v1/chat/completions', { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'draw' }] }, 'text/event-stream', body, expected);
  }

  /** The slowest /healthz over `ms` with nothing else to do: what the loaded machine adds by itself. */
  async function idleHealthz(ms: number): Promise<number> {
    const done = new Promise((resolve) => setTimeout(resolve, ms));
    return (await healthzDuring(served.url, done)).slowestMs;
  }

  function report(name: string, figures: Awaited<ReturnType<typeof relay>>): void {
    console.log(
      `      ${name}: ${figures.cpuMs} ms CPU; longest block ${figures.blocks.maxCpuMs.toFixed(1)} ms of CPU (${figures.blocks.maxWallMs.toFixed(0)} ms of wall clock); slowest /healthz ${figures.slowestMs.toFixed(0)} ms; peak RSS ${peakRssMiB(served.child.pid!).toFixed(0)} MiB`,
    );
  }

  it('one 16 MiB chat chunk: /healthz keeps answering, and the CPU grows linearly', async () => {
    const idle = await idleHealthz(2000);
    await relayChatEvent(1 * MiB);
    const small = await relayChatEvent(4 * MiB);
    const large = await relayChatEvent(16 * MiB);
    report('chat, 4 MiB event', small);
    report(`chat, 16 MiB event (slowest /healthz while idle ${idle.toFixed(0)} ms)`, large);
    expect(large.slowestMs - idle, 'slowest /healthz during the relay, beyond the idle one (ms)').to.be.below(MAX_HEALTHZ_OVER_IDLE_MS);
    expect(large.cpuMs, 'gateway CPU for the 16 MiB event (ms)').to.be.below(MAX_CPU_MS_16_MIB);
    expect(large.blocks.maxCpuMs, 'longest event-loop block, CPU ms').to.be.below(MAX_BLOCK_CPU_MS);
    // Four times the bytes, about four times the CPU (room for noise and the clock's 10 ms ticks); a rescan costs sixteen.
    expect(large.cpuMs / Math.max(small.cpuMs, 80), `CPU for 16 MiB (${large.cpuMs} ms) over 4 MiB (${small.cpuMs} ms)`).to.be.below(6);
  });

  it('one 16 MiB Messages delta, relayed as it came with no long block', async () => {
    const body = messagesStream(base64(16 * MiB));
    const figures = await relay('/v1/messages', { model: 'claude-test', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'draw' }] }, 'text/event-stream', body, body);
    report('messages, 16 MiB event', figures);
    expect(figures.blocks.maxCpuMs, 'longest event-loop block, CPU ms').to.be.below(MAX_BLOCK_CPU_MS);
  });

  it('one 16 MiB Responses partial image, relayed as it came with no long block', async () => {
    const body = responsesStream(base64(16 * MiB));
    const figures = await relay('/v1/responses', { model: 'gpt-test', stream: true, input: 'draw' }, 'text/event-stream', body, body);
    report('responses, 16 MiB partial image', figures);
    expect(figures.blocks.maxCpuMs, 'longest event-loop block, CPU ms').to.be.below(MAX_BLOCK_CPU_MS);
  });

  it('an 8 MiB JSON reply, relayed as it came, its usage read off the event loop', async () => {
    const body = chatReply(base64(8 * MiB));
    // Once to start the tokenizer's thread, which reads it (its start is not what is measured).
    await relay('/v1/chat/completions', { model: 'gpt-test', messages: [{ role: 'user', content: 'draw' }] }, 'application/json', body, body);
    const figures = await relay('/v1/chat/completions', { model: 'gpt-test', messages: [{ role: 'user', content: 'draw' }] }, 'application/json', body, body);
    report('chat, 8 MiB JSON reply', figures);
    expect(figures.blocks.maxCpuMs, 'longest event-loop block, CPU ms').to.be.below(MAX_BLOCK_CPU_MS);
  });
});

/**
 * Money and limits on large replies, in process: an 8 MiB reply and a 16 MiB event are charged their
 * usage at the model's prices to the nano-unit; a large garbled reply still fails over before anything
 * reaches the client; a reply over server.max_reply_bytes fails in the endpoint's own shape.
 * Prices per 1M tokens: input 1, output 5, i.e. 1,000 and 5,000 nano-units a token.
 */
describe('e2e: large replies are billed from their usage and bounded by server.max_reply_bytes', function () {
  this.timeout(60_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  const yaml = (upstream: string) => `
version: 1
server: { host: 127.0.0.1, max_reply_bytes: ${18 * MiB} }
store: { url: "sqlite::memory:" }
providers:
  openai: { protocol: openai, base_url: ${upstream}/v1, api_key: test-key }
  backup: { protocol: openai, base_url: ${upstream}/v1, api_key: test-key }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }, { provider: backup }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 2, backoff_base_ms: 0 } }
`;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yaml(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
  });
  after(async () => {
    await tg.stop();
    await fake.close();
  });

  const post = (body: object) =>
    fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` }, body: JSON.stringify(body) });

  async function chargeFor(requestId: string): Promise<ChargeRecord> {
    for (let tries = 0; tries < 500; tries++) {
      const found = (await tg.store.listCharges({ accountId: tg.accountId, limit: 100 })).find((charge) => charge.requestId === requestId);
      if (found !== undefined) return found;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`no charge for ${requestId}`);
  }

  it('charges an 8 MiB reply its usage at the prices, to the nano-unit', async () => {
    const body = chatReply(base64(8 * MiB));
    fake.enqueue({ status: 200, headers: { 'content-type': 'application/json' }, body });
    const response = await post({ model: 'gpt-priced', messages: [{ role: 'user', content: 'draw' }] });
    expect(Buffer.from(await response.arrayBuffer()).equals(body), 'the reply as it came').to.equal(true);
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect([charge.inputTokens, charge.outputTokens, charge.cost]).to.deep.equal([5, 7, 5n * 1000n + 7n * 5000n]);
  });

  it('charges a stream with one 16 MiB chunk its usage at the prices, to the nano-unit', async () => {
    const { body } = chatStream(16 * MiB);
    fake.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: Buffer.from(body.toString('utf8').replaceAll('gpt-test', 'gpt-priced')) });
    const response = await post({ model: 'gpt-priced', stream: true, messages: [{ role: 'user', content: 'draw' }] });
    expect((await response.text()).length).to.be.greaterThan(16 * MiB);
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect([charge.inputTokens, charge.outputTokens, charge.cost]).to.deep.equal([5, 7, 5n * 1000n + 7n * 5000n]);
  });

  it('fails a 2 MiB reply that is not JSON over to the next route before anything is sent', async () => {
    const good = chatReply('fine');
    fake.enqueue({ status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(`{"choices":[{"message":{"content":"${base64(2 * MiB)}`) }, { status: 200, headers: { 'content-type': 'application/json' }, body: good });
    const response = await post({ model: 'gpt-priced', messages: [{ role: 'user', content: 'draw' }] });
    expect(response.status).to.equal(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(good)).to.equal(true);
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect(charge.cost).to.equal(5n * 1000n + 7n * 5000n);
  });

  it('answers a reply over server.max_reply_bytes on every route with a 502 in the chat error shape', async () => {
    const huge = chatReply(base64(19 * MiB));
    fake.enqueue({ status: 200, headers: { 'content-type': 'application/json' }, body: huge }, { status: 200, headers: { 'content-type': 'application/json' }, body: huge });
    const response = await post({ model: 'gpt-priced', messages: [{ role: 'user', content: 'draw' }] });
    expect(response.status).to.equal(502);
    const { error } = (await response.json()) as { error: { code: string; type: string } };
    expect(error).to.deep.include({ type: 'server_error', code: 'upstream_invalid_response' });
  });

  it('ends a stream whose event outgrows server.max_reply_bytes with the error event, recorded as failed', async () => {
    const { body } = chatStream(19 * MiB);
    fake.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const response = await post({ model: 'gpt-priced', stream: true, messages: [{ role: 'user', content: 'draw' }] });
    const text = await response.text();
    // A blank line first: the cut event ends, and the error frame is read as an event of its own.
    expect(text.slice(-400)).to.match(/\n\ndata: \{"error":\{[^\n]*"code":"stream_interrupted"/);
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect(charge.outcome).to.equal('failed');
  });
});
