/**
 * `npm run bench:large-replies`: what one very large reply costs the gateway. Runs `tollgate serve` as a
 * child process (its CPU and event loop alone are measured, not the fake provider's or the client's)
 * and relays, one after the other: one 16 MiB SSE event on each native stream (chat, Messages,
 * Responses) and on a translated one (chat client, Messages provider), and one 8 MiB plain JSON reply,
 * native and translated. For each it prints the gateway's CPU (main thread and the whole process, the
 * tokenizer's thread included), the longest event-loop block inside the gateway in main-thread CPU
 * time (test/helpers/loop-probe.ts, preloaded: what a loaded machine does not stretch) and in
 * wall-clock time (its own `tollgate_event_loop_lag_seconds{quantile="1"}`, scraped before and after),
 * the slowest `GET /healthz` asked every 10 ms meanwhile, and the peak RSS during the relay. Asserts
 * nothing.
 *
 * Before and after, back to back: pass other package roots (a checkout of an older commit, built) as
 * arguments; each round runs every root in turn, so the machine's load falls on all of them alike.
 *
 *   node dist/bench/large-replies.js [/path/to/other/checkout ...]
 *   BENCH_ROUNDS       rounds of every scenario per root (3); the table shows the median and the worst
 *   BENCH_PROFILE_DIR  a directory: run the gateways under `node --cpu-prof` writing there
 *   BENCH_ONLY         a substring: only the scenarios whose name holds it
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cpuMillis, mainThreadCpuMillis } from './processes';

const MIB = 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const ONLY = process.env.BENCH_ONLY ?? '';
const HEALTHZ_EVERY_MS = 10;

/** Base64 of `bytes` characters: what an image in a reply looks like. */
function imageText(bytes: number): string {
  return randomBytes(Math.ceil((bytes * 3) / 4))
    .toString('base64')
    .slice(0, bytes);
}

function frame(event: string | null, data: unknown): string {
  return `${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}

function chatStream(text: string): string {
  const chunk = (delta: object) => ({ id: 'c1', object: 'chat.completion.chunk', model: 'gpt-test', choices: [{ index: 0, delta, finish_reason: null }], usage: null });
  const usage = { id: 'c1', object: 'chat.completion.chunk', model: 'gpt-test', choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } };
  return [chunk({ role: 'assistant', content: '' }), chunk({ content: text }), usage].map((data) => frame(null, data)).join('') + 'data: [DONE]\n\n';
}

function messagesStream(text: string): string {
  return [
    frame('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } }),
    frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    frame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } }),
    frame('message_stop', { type: 'message_stop' }),
  ].join('');
}

function responsesStream(image: string): string {
  const response = (status: string, extra: object) => ({ id: 'resp_1', object: 'response', status, model: 'gpt-test', output: [], ...extra });
  return [
    frame('response.created', { type: 'response.created', response: response('in_progress', {}) }),
    frame('response.image_generation_call.partial_image', { type: 'response.image_generation_call.partial_image', output_index: 0, item_id: 'ig_1', partial_image_index: 0, partial_image_b64: image }),
    frame('response.completed', {
      type: 'response.completed',
      response: response('completed', { output: [{ type: 'image_generation_call', id: 'ig_1', status: 'completed', result: '' }], usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 } }),
    }),
  ].join('');
}

function chatReply(text: string): string {
  return JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    model: 'gpt-test',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
  });
}

function messagesReply(text: string): string {
  return JSON.stringify({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 5, output_tokens: 7 },
  });
}

interface Scenario {
  readonly name: string;
  /** The client's path and body. */
  readonly path: string;
  readonly request: object;
  /** What the fake provider answers, whole, in one write. */
  readonly reply: () => { contentType: string; body: string };
}

const SSE = 'text/event-stream';
const JSON_TYPE = 'application/json';
const chatRequest = (model: string, stream: boolean) => ({ model, stream, max_tokens: 16, messages: [{ role: 'user', content: 'draw' }] });

const SCENARIOS: readonly Scenario[] = [
  { name: 'chat stream, one 16 MiB event', path: '/v1/chat/completions', request: chatRequest('gpt-test', true), reply: () => ({ contentType: SSE, body: chatStream(imageText(16 * MIB)) }) },
  { name: 'messages stream, one 16 MiB event', path: '/v1/messages', request: chatRequest('claude-test', true), reply: () => ({ contentType: SSE, body: messagesStream(imageText(16 * MIB)) }) },
  {
    name: 'responses stream, one 16 MiB partial image',
    path: '/v1/responses',
    request: { model: 'gpt-test', stream: true, input: 'draw' },
    reply: () => ({ contentType: SSE, body: responsesStream(imageText(16 * MIB)) }),
  },
  { name: 'chat→messages stream, one 16 MiB event', path: '/v1/chat/completions', request: chatRequest('claude-test', true), reply: () => ({ contentType: SSE, body: messagesStream(imageText(16 * MIB)) }) },
  { name: 'chat plain, 8 MiB JSON reply', path: '/v1/chat/completions', request: chatRequest('gpt-test', false), reply: () => ({ contentType: JSON_TYPE, body: chatReply(imageText(8 * MIB)) }) },
  { name: 'chat→messages plain, 8 MiB JSON reply', path: '/v1/chat/completions', request: chatRequest('claude-test', false), reply: () => ({ contentType: JSON_TYPE, body: messagesReply(imageText(8 * MIB)) }) },
].filter((scenario) => scenario.name.includes(ONLY));

/** The fake provider: answers every request with the reply set last, in one write. */
function startUpstream(): Promise<{ server: Server; url: string; set: (reply: { contentType: string; body: string }) => void }> {
  let next = { contentType: JSON_TYPE, body: '{}' };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': next.contentType });
      res.end(next.body);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, set: (reply) => (next = reply) })),
  );
}

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

interface Gateway {
  readonly root: string;
  /** Where the loop probe writes what it saw. */
  readonly probe: string;
  readonly child: ChildProcess;
  readonly url: string;
  readonly key: string;
  readonly dir: string;
}

/** `tollgate serve` of the package at `root`, in a fresh folder; resolves once it listens and printed its key. */
function startGateway(root: string, upstream: string): Promise<Gateway> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-large-replies-'));
  writeFileSync(path.join(dir, 'gateway.yaml'), gatewayYaml(upstream));
  const probe = path.join(dir, 'loop-probe.json');
  const nodeArgs = ['--require', LOOP_PROBE, ...(PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`])];
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'bin', 'tollgate.js'), 'serve', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', TOLLGATE_LOOP_PROBE_FILE: probe },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      const key = /^\s+(sk-[A-Za-z0-9]{48})$/m.exec(out)?.[1];
      if (url !== undefined && key !== undefined) resolve({ root, probe, child, url, key, dir });
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`the gateway of ${root} exited with ${code}:\n${out}`)));
  });
}

/** The loop probe of this tree, preloaded into every gateway measured (theirs and older trees alike). */
const LOOP_PROBE = path.join(__dirname, '..', 'test', 'helpers', 'loop-probe.js');

/** What the loop probe saw since it was last asked, in ms of main-thread CPU (see loop-probe.ts). */
async function probeCpuMs(gateway: Gateway): Promise<number> {
  const seq = (): number => {
    try {
      return (JSON.parse(readFileSync(gateway.probe, 'utf8')) as { seq: number }).seq;
    } catch {
      return 0;
    }
  };
  const before = seq();
  gateway.child.kill('SIGUSR2');
  while (seq() === before) await new Promise((resolve) => setTimeout(resolve, 10));
  return (JSON.parse(readFileSync(gateway.probe, 'utf8')) as { maxCpuMs: number }).maxCpuMs;
}

/** The longest event-loop block since the previous scrape, in ms, from the gateway's own metrics. */
async function loopMaxMs(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = /^tollgate_event_loop_lag_seconds\{quantile="1"\} (\S+)$/m.exec(text)?.[1];
  return value === undefined ? NaN : Number(value) * 1000;
}

function peakRssMiB(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

/** Resets the process's peak RSS to its current RSS (Linux: writing 5 to clear_refs). */
function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Not allowed here: the peak then covers the process's life so far.
  }
}

/** Asks /healthz every HEALTHZ_EVERY_MS until `done` settles; the slowest answer in ms. */
async function slowestHealthz(url: string, done: Promise<unknown>): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => undefined);
  let slowest = 0;
  do {
    const startedAt = performance.now();
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    slowest = Math.max(slowest, performance.now() - startedAt);
    await new Promise((resolve) => setTimeout(resolve, HEALTHZ_EVERY_MS));
  } while (!finished);
  return slowest;
}

interface Figures {
  readonly cpuMs: number;
  readonly mainCpuMs: number;
  readonly loopCpuMs: number;
  readonly loopMaxMs: number;
  readonly healthzMs: number;
  readonly peakRssMiB: number;
  readonly bytes: number;
}

async function measure(gateway: Gateway, scenario: Scenario): Promise<Figures> {
  const pid = gateway.child.pid!;
  await loopMaxMs(gateway.url);
  await probeCpuMs(gateway);
  resetPeakRss(pid);
  const cpuBefore = cpuMillis(pid);
  const mainBefore = mainThreadCpuMillis(pid);
  const sent = (async () => {
    const response = await fetch(`${gateway.url}${scenario.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.key}` },
      body: JSON.stringify(scenario.request),
    });
    let bytes = 0;
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
    if (response.status !== 200) throw new Error(`${scenario.name}: status ${response.status}`);
    return bytes;
  })();
  const [bytes, healthzMs] = await Promise.all([sent, slowestHealthz(gateway.url, sent)]);
  // The output count may still run on the tokenizer's thread: let it finish before reading the CPU.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    cpuMs: cpuMillis(pid) - cpuBefore,
    mainCpuMs: mainThreadCpuMillis(pid) - mainBefore,
    loopCpuMs: await probeCpuMs(gateway),
    loopMaxMs: await loopMaxMs(gateway.url),
    healthzMs,
    peakRssMiB: peakRssMiB(pid),
    bytes,
  };
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const worst = (values: readonly number[]) => Math.max(...values);

function cell(values: readonly number[]): string {
  return `${median(values).toFixed(0)} (${worst(values).toFixed(0)})`.padStart(12);
}

async function main(): Promise<void> {
  const roots = [path.resolve(__dirname, '..', '..'), ...process.argv.slice(2).map((root) => path.resolve(root))];
  const upstream = await startUpstream();
  const gateways: Gateway[] = [];
  for (const root of roots) gateways.push(await startGateway(root, upstream.url));
  const results = new Map<string, Figures[]>();
  try {
    // A warm-up request per gateway: the first request loads what it needs.
    for (const gateway of gateways) {
      upstream.set({ contentType: JSON_TYPE, body: chatReply('hi') });
      await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.key}` }, body: JSON.stringify(chatRequest('gpt-test', false)) }).then((r) => r.arrayBuffer());
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of SCENARIOS) {
        const reply = scenario.reply();
        upstream.set(reply);
        for (const gateway of gateways) {
          const key = `${scenario.name}\u0000${gateway.root}`;
          results.set(key, [...(results.get(key) ?? []), await measure(gateway, scenario)]);
        }
      }
    }
  } finally {
    for (const gateway of gateways) {
      gateway.child.kill('SIGTERM');
      await new Promise((resolve) => (gateway.child.exitCode !== null ? resolve(null) : gateway.child.once('exit', resolve)));
      rmSync(gateway.dir, { recursive: true, force: true });
    }
    upstream.server.close();
  }
  console.log(`median (worst) of ${ROUNDS} rounds; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  const heads = ['CPU ms', 'main CPU ms', 'block CPU ms', 'block ms', '/healthz ms', 'peak RSS MiB'];
  console.log(`${'scenario'.padEnd(42)} ${'tree'.padEnd(16)} ${heads.map((head) => head.padStart(12)).join(' ')}`);
  for (const scenario of SCENARIOS) {
    for (const gateway of gateways) {
      const figures = results.get(`${scenario.name}\u0000${gateway.root}`) ?? [];
      const pick = (read: (f: Figures) => number) => cell(figures.map(read));
      console.log(
        `${scenario.name.padEnd(42)} ${path.basename(gateway.root).padEnd(16)} ${pick((f) => f.cpuMs)} ${pick((f) => f.mainCpuMs)} ${pick((f) => f.loopCpuMs)} ${pick((f) => f.loopMaxMs)} ${pick((f) => f.healthzMs)} ${pick((f) => f.peakRssMiB)}`,
      );
    }
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
