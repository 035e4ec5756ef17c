/**
 * `server.workers: 2` against a real `tollgate serve` child process on a temp SQLite file: both
 * workers serve, the first-run password is printed once, a balance admits exactly what it affords
 * across both, a revocation and a rate limit hold across both, /metrics counts both, SIGHUP reloads
 * both, a killed worker is replaced, and SIGTERM drains a stream before the primary exits 0.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { PACKAGE_ROOT } from '../../src/paths';
import { SqliteStore } from '../../src/store/sqlite';
import { startFakeUpstream, waitUntil, type FakeUpstream } from '../helpers/fake-upstream';
import { chatStream } from '../helpers/upstream-replies';

const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');
const WORKER_HEADER = 'x-tollgate-worker';

function gatewayYaml(upstream: string, extraModels = ''): string {
  return `version: 1
server: { host: 127.0.0.1, workers: 2, shutdown_unready_ms: 0 }
store: { url: "sqlite:./data/tollgate.db" }
providers:
  fake: { protocol: openai, base_url: ${upstream}/v1, api_key: sk-upstream }
  echo: { protocol: echo }
models:
  priced: { family: openai, routes: [{ provider: fake }], price: { input: 1, output: 5 }, max_output_tokens: 100, context_window: 10000 }
  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }
${extraModels}plugins:
  billing: { flush_interval_ms: 10 }
  rate-limit: {}
`;
}

interface Reply {
  readonly status: number;
  readonly worker: string | undefined;
  readonly body: string;
}

/** One request on a connection of its own, so the cluster hands consecutive requests to alternating workers. */
function send(url: string, pathname: string, options: { key?: string; body?: unknown } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = httpRequest(
      `${url}${pathname}`,
      {
        method: payload === undefined ? 'GET' : 'POST',
        agent: false,
        headers: {
          ...(payload !== undefined && { 'content-type': 'application/json' }),
          ...(options.key !== undefined && { authorization: `Bearer ${options.key}` }),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, worker: res.headers[WORKER_HEADER] as string | undefined, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const chatBody = (model: string, extra: object = {}) => ({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra });

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

function logLines(out: string): Record<string, unknown>[] {
  return out
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('e2e: `tollgate serve` with server.workers: 2', function () {
  this.timeout(60000);
  let dir: string;
  let configFile: string;
  let upstream: FakeUpstream;
  let child: ChildProcess;
  let out = '';
  let url: string;
  let adminKey: string;
  let store: SqliteStore;
  let accountId: string;
  /** Chat requests this test sent: /metrics must count every one of them, whichever worker served it. */
  let chatRequests = 0;

  async function chat(key: string, model = 'priced', extra: object = {}): Promise<Reply> {
    chatRequests += 1;
    return send(url, '/v1/chat/completions', { key, body: chatBody(model, extra) });
  }

  before(async () => {
    upstream = await startFakeUpstream();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-workers-'));
    configFile = path.join(dir, 'gateway.yaml');
    writeFileSync(configFile, gatewayYaml(upstream.url));
    child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
      cwd: dir,
      env: { PATH: process.env.PATH, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    ({ url, adminKey } = await waitUntil(
      () => {
        const listening = /"url":"(http:\/\/[^"]+)".*"msg":"tollgate is listening"/.exec(out)?.[1];
        const key = /^\s+(sk-[A-Za-z0-9]{48})$/m.exec(out)?.[1];
        return listening === undefined || key === undefined ? undefined : { url: listening, adminKey: key };
      },
      20000,
      'tollgate serve to listen with its workers',
    ));
    // The test's own connection to the file, as the CLI has: another process beside the workers.
    store = new SqliteStore(path.join(dir, 'data', 'tollgate.db'));
    await store.migrate();
    accountId = (await store.findAccountByName('admin'))!.id;
  });

  after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await store?.close();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the first-run password once, and says it listens once, with both workers up', () => {
    expect(out.match(/log in as "admin" with the password/g)).to.have.length(1);
    expect(out.match(/^\s+sk-[A-Za-z0-9]{48}$/gm)).to.have.length(1);
    const listening = logLines(out).filter((line) => line.msg === 'tollgate is listening');
    expect(listening).to.have.length(1);
    expect(listening[0].workers).to.equal(2);
  });

  it('serves requests from both workers', async () => {
    const replies = [];
    for (let i = 0; i < 6; i++) replies.push(await chat(adminKey, 'tollgate-echo'));
    expect(replies.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
    expect(new Set(replies.map((reply) => reply.worker))).to.deep.equal(new Set(['1', '2']));
  });

  it('admits exactly the requests a balance affords, under concurrency across both workers', async () => {
    // The hold of one request, read from the store while an upstream call keeps it open, on another
    // account: the hold depends on the request alone.
    const prober = await store.createAccount({ name: 'prober', role: 'user' });
    const { key: proberKey } = await issueApiKey(store, { accountId: prober.id, name: 'probe' });
    await store.credit({ accountId: prober.id, amount: 10_000_000_000n, kind: 'admin', actor: 'test', note: null });
    let open!: () => void;
    upstream.enqueue({ until: new Promise<void>((resolve) => (open = resolve)), then: chatCompletionStep() });
    const probe = chat(proberKey);
    await upstream.waitForRequests(1);
    const hold = (await store.balance(prober.id)).held;
    open();
    expect((await probe).status).to.equal(200);
    upstream.reset();

    // Funds for 5 holds and a half: 5 requests get in, however the 12 spread over the workers.
    const affordable = 5;
    expect((await store.balance(accountId)).balance).to.equal(0n);
    await store.credit({ accountId, amount: BigInt(affordable) * hold + hold / 2n, kind: 'admin', actor: 'test', note: null });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    for (let i = 0; i < 12; i++) upstream.enqueue({ until: gate, then: chatCompletionStep() });
    const pending = Array.from({ length: 12 }, () => chat(adminKey));
    // The refused ones answer at once; the admitted ones wait at the upstream until the gate opens.
    await upstream.waitForRequests(affordable, 15000);
    const statusesSoFar: number[] = [];
    pending.forEach((reply) => void reply.then((answer) => statusesSoFar.push(answer.status)));
    await waitUntil(() => (statusesSoFar.length === 12 - affordable ? true : undefined), 15000, 'the refusals');
    expect(upstream.requests).to.have.length(affordable);
    release();
    const replies = await Promise.all(pending);
    // The refused requests never came for their steps.
    upstream.reset();
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status === 200)).to.have.length(affordable);
    expect(statuses.filter((status) => status === 402)).to.have.length(12 - affordable);
    expect(new Set(replies.map((reply) => reply.worker))).to.deep.equal(new Set(['1', '2']));
    const after = await waitUntilBalanceSettles(store, accountId);
    expect(after.held).to.equal(0n);
    expect(after.balance >= 0n, `balance ${after.balance}`).to.equal(true);
  });

  it('refuses a key revoked through the CLI on both workers', async () => {
    const { key, record } = await issueApiKey(store, { accountId, name: 'to-revoke' });
    const before = [];
    for (let i = 0; i < 4; i++) before.push(await chat(key, 'tollgate-echo'));
    expect(before.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200]);

    const revoke = spawnSync(process.execPath, [CLI, 'key', 'revoke', record.id, '--config', configFile], { cwd: dir, env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(revoke.status, revoke.stderr).to.equal(0);

    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await chat(key, 'tollgate-echo'));
    expect(replies.map((reply) => reply.status)).to.deep.equal([401, 401, 401, 401]);
    expect(new Set(replies.map((reply) => reply.worker))).to.deep.equal(new Set(['1', '2']));
  });

  it('holds a key\'s requests-per-minute limit across both workers', async () => {
    const { key, record } = await issueApiKey(store, { accountId, name: 'limited' });
    await store.setKeyLimits(record.id, { rateLimits: { rpm: 4 } });
    const replies = await Promise.all(Array.from({ length: 10 }, () => chat(key, 'tollgate-echo')));
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status === 200)).to.have.length(4);
    expect(statuses.filter((status) => status === 429)).to.have.length(6);
    expect(new Set(replies.map((reply) => reply.worker))).to.deep.equal(new Set(['1', '2']));
  });

  it('answers /metrics with the sum over both workers, whichever one is scraped', async () => {
    const counted = async () => {
      const reply = await send(url, '/metrics');
      const total = reply.body
        .split('\n')
        .filter((line) => line.startsWith('tollgate_requests_total{endpoint="chat"'))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
      return { worker: reply.worker, total };
    };
    const seen = new Set<string | undefined>();
    const deadline = Date.now() + 10000;
    while (seen.size < 2 && Date.now() < deadline) {
      const { worker, total } = await counted();
      if (total === chatRequests) seen.add(worker);
    }
    expect(seen).to.deep.equal(new Set(['1', '2']));
  });

  it('reloads both workers on `tollgate reload`, which signals the primary named in the one pid file', async () => {
    writeFileSync(configFile, gatewayYaml(upstream.url, '  echo-2: { family: openai, routes: [{ provider: echo }], free: true }\n'));
    const reload = spawnSync(process.execPath, [CLI, 'reload'], { cwd: dir, env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(reload.status, reload.stderr).to.equal(0);
    expect(reload.stdout).to.contain(`sent SIGHUP to tollgate (pid ${child.pid})`);
    const reloaded = () => logLines(out).filter((line) => String(line.msg).includes('models added: echo-2'));
    await waitUntil(() => (reloaded().length === 2 ? true : undefined), 10000, 'both workers to reload');
    expect(new Set(reloaded().map((line) => line.worker))).to.deep.equal(new Set([1, 2]));
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await chat(adminKey, 'echo-2'));
    expect(replies.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200]);
    expect(new Set(replies.map((reply) => reply.worker))).to.deep.equal(new Set(['1', '2']));
  });

  it('replaces a worker that dies', async () => {
    const pidOfWorker1 = logLines(out).find((line) => line.worker === 1 && typeof line.pid === 'number' && line.requestId !== undefined)!.pid as number;
    process.kill(pidOfWorker1, 'SIGKILL');
    await waitUntil(() => (out.includes('worker 1 exited unexpectedly') ? true : undefined), 10000, 'the primary to notice');
    const seen = new Set<string | undefined>();
    const deadline = Date.now() + 20000;
    while (seen.size < 2 && Date.now() < deadline) {
      const reply = await chat(adminKey, 'tollgate-echo').catch(() => null);
      if (reply?.status === 200) seen.add(reply.worker);
    }
    expect(seen).to.deep.equal(new Set(['1', '2']));
  });

  it('drains an in-flight stream on SIGTERM, then the primary exits 0', async () => {
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const stream = chatStream({ includeUsage: true });
    upstream.enqueue({ ...stream, events: [stream.events[0], { until: gate }, ...stream.events.slice(1)] });
    const reply = chat(adminKey, 'priced', { stream: true, stream_options: { include_usage: true } });
    await upstream.waitForRequests(upstream.requests.length + 1, 10000);
    const exited = exitCode(child);
    child.kill('SIGTERM');
    await waitUntil(() => (out.match(/"msg":"shutting down: finishing in-flight requests"/g)?.length === 2 ? true : undefined), 10000, 'both workers to drain');
    finish();
    const streamed = await reply;
    expect(streamed.status, streamed.body).to.equal(200);
    expect(streamed.body).to.contain('data: [DONE]');
    expect(await exited).to.equal(0);
  });
});

function chatCompletionStep() {
  return { status: 200, json: { id: 'chatcmpl-w', object: 'chat.completion', created: 1, model: 'priced', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } } };
}

async function waitUntilBalanceSettles(store: SqliteStore, accountId: string): Promise<{ balance: bigint; held: bigint }> {
  const deadline = Date.now() + 10000;
  for (;;) {
    const now = await store.balance(accountId);
    if (now.held === 0n || Date.now() > deadline) return now;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('e2e: `tollgate serve` with workers that cannot start', function () {
  this.timeout(30000);

  it('exits 1 with the reason when a worker dies before the server listens, rather than restarting it in a loop', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-workers-'));
    let child: ChildProcess | null = null;
    try {
      writeFileSync(path.join(dir, 'gateway.yaml'), gatewayYaml('http://127.0.0.1:9'));
      child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], {
        cwd: dir,
        env: { PATH: process.env.PATH, LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      expect(await exitCode(child), out).to.equal(1);
      expect(out).to.contain('tollgate could not start its workers');
      expect(out).not.to.contain('exited unexpectedly');
      expect(out).not.to.contain('tollgate is listening');
    } finally {
      // Its workers leave with it.
      if (child !== null && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      taken.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
