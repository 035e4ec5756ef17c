/**
 * The rule of docs/limits.md, held against hostile requests within the configured limits: the event
 * loop is never blocked long (a concurrent /healthz answers), and memory does not grow with the number
 * of requests. Bounds are generous (200 ms of block, tens of MiB): what they catch is seconds and
 * hundreds of MiB, as before these fixes.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { expect } from 'chai';
import { consoleCacheSize } from '../../src/admin/console-pages';
import { healthzDuring, loopBlockDuring, memoryAfterGcMiB } from '../helpers/bounds';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, TEST_MAX_BODY_BYTES, type TestGateway } from '../helpers/test-gateway';

/**
 * The 200 ms bound of docs/limits.md, on the gateway thread's CPU time: a loaded machine stretches a
 * block's wall-clock time (a 30 ms block took 230 ms with ten suites on two cores), not its CPU time.
 */
const MAX_BLOCK_CPU_MS = 200;
const MAX_HEALTHZ_MS = 1000;
const BODY_LIMIT = 8 * 1024 * 1024;

describe('e2e: no request stalls or bloats the gateway', function () {
  this.timeout(60_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    const yaml = defaultTestYaml(fake.url)
      .replace(`max_body_bytes: ${TEST_MAX_BODY_BYTES}`, `max_body_bytes: ${BODY_LIMIT}\n  headers_timeout_ms: 1000`);
    tg = await startTestGateway({ yaml });
  });
  after(async () => {
    await tg.stop();
    await fake.close();
  });

  /** Sends `body` to `path` while /healthz is asked meanwhile; the loop's longest block and /healthz's slowest answer. */
  async function hostile(path: string, body: string) {
    const sent = fetch(`${tg.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}`, 'x-api-key': tg.key },
      body,
    }).then(async (response) => ({ status: response.status, text: await response.text() }));
    const { result, maxCpuMs } = await loopBlockDuring(async () => {
      const [answer, health] = await Promise.all([sent, healthzDuring(tg.url, sent)]);
      return { answer, health };
    });
    return { ...result, maxCpuMs };
  }

  it('count_tokens on an OpenAI-family model: 1 MiB of one random word is counted without blocking', async () => {
    // Before: counted in one synchronous call, 1 MiB blocked the loop 2 s and 4 MiB 49 s.
    const word = randomBytes(768 * 1024).toString('base64');
    const { answer, health, maxCpuMs } = await hostile(
      '/v1/messages/count_tokens',
      JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: word }] }),
    );
    expect(answer.status, answer.text.slice(0, 200)).to.equal(200);
    expect((JSON.parse(answer.text) as { input_tokens: number }).input_tokens).to.be.greaterThan(300_000);
    expect(maxCpuMs, 'longest event-loop block (CPU ms)').to.be.below(MAX_BLOCK_CPU_MS);
    expect(health.answered, '/healthz answers meanwhile').to.be.greaterThan(0);
    expect(health.slowestMs, 'slowest /healthz (ms)').to.be.below(MAX_HEALTHZ_MS);
  });

  it('a translated conversation of user turns is merged in time linear in their number', async () => {
    // Parsing and translating a body is one synchronous step (docs/limits.md): what is held here is
    // that it grows linearly. Four times the turns may block about four times as long; merging them
    // quadratically, as before, took sixteen times as long (40,000 turns blocked 16 s, 200,000 minutes).
    const blockFor = async (turns: number) => {
      const messages = Array.from({ length: turns }, (_, i) => ({ role: 'user', content: `turn ${i}` }));
      const { answer, maxCpuMs } = await hostile('/v1/chat/completions', JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 16, messages }));
      expect(answer.status, answer.text.slice(0, 200)).to.equal(200);
      const sent = fake.requests.at(-1)!.json() as { messages: { role: string; content: unknown[] }[] };
      expect(sent.messages).to.have.length(1);
      expect(sent.messages[0].content).to.have.length(turns);
      return maxCpuMs;
    };
    // The least of three runs: another suite's load or a major GC only ever adds to a block, so the
    // least is the one closest to the work itself (one run each saw 14× on a machine loaded to 10).
    const leastOfThree = async (turns: number) => Math.min(await blockFor(turns), await blockFor(turns), await blockFor(turns));
    await blockFor(5_000);
    const small = await leastOfThree(25_000);
    const large = await leastOfThree(100_000);
    expect(large / Math.max(small, 20), `block for 100,000 turns (${large.toFixed(0)} CPU ms) over 25,000 (${small.toFixed(0)} CPU ms)`).to.be.below(10);
  });

  it('5,000 requests for console assets that do not exist leave no memory behind', async () => {
    const ask = (i: number) => fetch(`${tg.url}/console/assets/missing-${i}-${'x'.repeat(200)}.js`).then((response) => response.arrayBuffer());
    const cachedBefore = consoleCacheSize();
    for (let i = 0; i < 500; i++) await ask(i);
    const before = memoryAfterGcMiB();
    for (let batch = 0; batch < 5_000; batch += 100) await Promise.all(Array.from({ length: 100 }, (_, i) => ask(1000 + batch + i)));
    const after = memoryAfterGcMiB();
    expect(consoleCacheSize(), 'files held').to.be.at.most(cachedBefore + 1);
    // Before, every name was kept with its path and a settled promise (the issue measured +176 MiB RSS
    // for 20,000): the number of entries is what fails then; the memory bound is a generous backstop.
    expect(after - before, 'memory growth (MiB) after GC').to.be.below(24);
  });

  it('a connection that never finishes its headers is closed soon after headers_timeout_ms (1 s), not 30 s later', async () => {
    const startedAt = performance.now();
    const closedAfterMs = await new Promise<number>((resolve, reject) => {
      const socket = connect(tg.gateway.port, '127.0.0.1', () => socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: '));
      socket.on('error', () => undefined);
      // Read what comes (node's 408): a paused socket would never see the server's end, nor close.
      socket.resume();
      socket.on('close', () => resolve(performance.now() - startedAt));
      // Then silence: node notices only at its periodic connection check (a byte arriving would make
      // it look at once), which ran every 30 s before.
      setTimeout(() => reject(new Error('the socket was still open after 15 s')), 15_000).unref();
    });
    // node checks every tenth of the timeout now (at most each second); it used to check every 30 s,
    // so a silent socket lived up to 31 s with this timeout.
    expect(closedAfterMs, 'time to close (ms)').to.be.below(5000);
  });
});
