/**
 * docs/limits.md: a stream's memory is bounded whatever its length, on every route. A provider that
 * never ends its stream (test/helpers/endless-upstream.ts) is read by a fast client through
 * `tollgate serve` (a child process, its RSS read from /proc) on chat, Messages and Responses, each
 * against an OpenAI model and a Claude model: three native routes and three translated ones.
 *
 * The build before this test kept every text delta of a translated stream from a Messages upstream
 * twice over (the text block's text in the reader, for citations; the content so far in the chat
 * writer, for their offsets): RSS grew by about what was relayed, 190 MiB for 192 MiB. Now the
 * growth while STREAM_MIB (192 by default, TOLLGATE_ENDLESS_MIB to change it) are relayed stays
 * under 64 MiB on all six. A Responses client of a Claude model is the exception by protocol: its
 * closing events repeat the whole answer, so what it holds for them is bounded (HELD_OUTPUT_CHARS)
 * and a longer answer ends there with `response.failed` (stream_interrupted), as an event over
 * max_reply_bytes does.
 *
 * 1 GiB a case is the figure; it takes about 30 s a case on a 2-core machine that runs other
 * suites (the tokenizer counting the output sets the pace), so CI relays 192 MiB, where the build
 * before grew by 190: `TOLLGATE_ENDLESS_MIB=1024` runs the full length.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { HELD_OUTPUT_CHARS } from '../../src/protocols/held-output';
import { SseParser } from '../../src/protocols/sse';
import { startEndlessUpstream, type EndlessUpstream } from '../helpers/endless-upstream';
import { exitCode, serveChild, type ServedChild } from '../helpers/serve-child';

const MiB = 1024 * 1024;

type Payload = Record<string, unknown> & { type: string };
const STREAM_MIB = Number(process.env.TOLLGATE_ENDLESS_MIB ?? 128);
const MAX_GROWTH_MIB = 64;
/** Read before each measured stream, on the same route: loads what the route loads once (the tokenizer's tables, code). */
const WARM_UP_BYTES = 8 * MiB;
/** How often the client reads the gateway's RSS. */
const SAMPLE_EVERY_BYTES = 4 * MiB;

function gatewayYaml(upstream: string): string {
  return `version: 1
server:
  host: 127.0.0.1
store:
  url: sqlite:./data/tollgate.db
providers:
  openai: { protocol: openai, base_url: "${upstream}/v1", api_key: test-key }
  anthropic: { protocol: anthropic, base_url: "${upstream}", api_key: test-key }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true }
  claude-test: { family: anthropic, routes: [{ provider: anthropic }], free: true }
plugins:
  auth: {}
  upstream: { failover: { max_attempts: 1 } }
`;
}

function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

interface Case {
  readonly client: 'chat' | 'messages' | 'responses';
  readonly model: 'gpt-test' | 'claude-test';
  readonly translated: boolean;
}

const CASES: readonly Case[] = [
  { client: 'chat', model: 'gpt-test', translated: false },
  { client: 'messages', model: 'gpt-test', translated: true },
  { client: 'responses', model: 'gpt-test', translated: false },
  { client: 'chat', model: 'claude-test', translated: true },
  { client: 'messages', model: 'claude-test', translated: false },
  { client: 'responses', model: 'claude-test', translated: true },
];

/** How a Responses stream cut at the bound ends: its error event, saying why. */
const CUT_SHORT = ['event: response.failed', 'characters the gateway holds to repeat at the end of a translated stream'];

const PATHS = { chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses' } as const;

function bodyOf({ client, model }: Case): string {
  if (client === 'responses') return JSON.stringify({ model, stream: true, input: 'Talk forever.' });
  return JSON.stringify({ model, stream: true, max_tokens: 4096, messages: [{ role: 'user', content: 'Talk forever.' }] });
}

interface Read {
  readonly status: number;
  readonly bytes: number;
  /** True when the gateway ended the stream before `limit` bytes. */
  readonly ended: boolean;
  /** The stream's last 4 KiB. */
  readonly tail: string;
  /** Which of the needles asked for the stream held. */
  readonly found: ReadonlySet<string>;
  /** Every chunk, when asked to keep them. */
  readonly chunks: readonly Buffer[];
  /** The highest RSS of the gateway seen while reading, in MiB. */
  readonly maxRss: number;
}

/** Streams `c` from the gateway as fast as it comes, until `limit` bytes or the end; RSS sampled as it goes. */
function readStream(gateway: ServedChild, c: Case, limit: number, needles: readonly string[] = [], keep = false): Promise<Read> {
  const pid = gateway.child.pid!;
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}${PATHS[c.client]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.key}`, 'anthropic-version': '2023-06-01' },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let bytes = 0;
      let nextSample = SAMPLE_EVERY_BYTES;
      let maxRss = 0;
      // The last two chunks: the stream's end, whatever the chunk sizes.
      let last: Buffer[] = [];
      const found = new Set<string>();
      const chunks: Buffer[] = [];
      const done = (ended: boolean) => {
        const tail = Buffer.concat(last).toString('utf8').slice(-4096);
        resolve({ status: res.statusCode ?? 0, bytes, ended, tail, found, chunks, maxRss: Math.max(maxRss, rssMiB(pid)) });
      };
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (keep) chunks.push(chunk);
        last = [last[last.length - 1] ?? Buffer.alloc(0), chunk];
        if (needles.length > 0) {
          // A needle may straddle two chunks: the end of the one before is searched with this one.
          const seam = Buffer.concat([last[0].subarray(-256), chunk]);
          for (const needle of needles) if (seam.includes(needle)) found.add(needle);
        }
        if (bytes >= nextSample) {
          maxRss = Math.max(maxRss, rssMiB(pid));
          nextSample += SAMPLE_EVERY_BYTES;
        }
        if (bytes >= limit) {
          res.removeAllListeners('end');
          req.destroy();
          done(false);
        }
      });
      res.on('end', () => done(true));
      res.on('error', () => undefined);
    });
    req.end(bodyOf(c));
  });
}

describe('endless streams: memory stays bounded on every route (docs/limits.md)', function () {
  this.timeout(240_000);
  let upstream: EndlessUpstream;
  let dir: string;
  let gateway: ServedChild;

  before(async () => {
    upstream = await startEndlessUpstream();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-endless-'));
    writeFileSync(path.join(dir, 'gateway.yaml'), gatewayYaml(upstream.url));
    gateway = await serveChild(dir);
  });

  after(async () => {
    gateway.child.kill('SIGTERM');
    await exitCode(gateway.child);
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const c of CASES) {
    const name = `${c.client} client, ${c.model} (${c.translated ? 'translated' : 'native'})`;
    const length = c.client === 'responses' && c.translated ? 'cut short at the held bound' : `${STREAM_MIB} MiB relayed`;
    it(`${name}: ${length}, RSS growth under ${MAX_GROWTH_MIB} MiB`, async () => {
      await readStream(gateway, c, WARM_UP_BYTES);
      // Let the warm-up's end settle (its count, its log line) before the baseline.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const pid = gateway.child.pid!;
      const before = rssMiB(pid);
      const cutShort = c.client === 'responses' && c.translated;
      const read = await readStream(gateway, c, STREAM_MIB * MiB, CUT_SHORT, cutShort);
      const growth = read.maxRss - before;
      expect(read.status).to.equal(200);
      if (cutShort) {
        // The closing events repeat the answer: it ends once what they would repeat passes the bound.
        expect(read.ended, `ended after ${(read.bytes / MiB).toFixed(1)} MiB`).to.equal(true);
        expect(read.bytes).to.be.above(HELD_OUTPUT_CHARS);
        expect([...read.found]).to.have.members(CUT_SHORT);
        // What the error event shows is what was sent: no delta made before the cut was lost with it.
        const events = new SseParser().push(Buffer.concat(read.chunks)).map((event) => JSON.parse(event.data) as Payload);
        const sent = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta as string).join('');
        const failed = events[events.length - 1] as Payload & { response: { output: Array<{ content: Array<{ text: string }> }> } };
        expect(failed.type).to.equal('response.failed');
        expect(failed.response.output[0].content[0].text === sent, 'the failed response holds the text sent').to.equal(true);
        expect(sent.length).to.be.above(HELD_OUTPUT_CHARS / 2);
      } else {
        expect(read.ended, `the stream ended after ${(read.bytes / MiB).toFixed(1)} MiB: ${read.tail.slice(-300)}`).to.equal(false);
      }
      expect(growth, `RSS ${before.toFixed(0)} MiB before, ${read.maxRss.toFixed(0)} MiB at most while ${(read.bytes / MiB).toFixed(0)} MiB were relayed`).to.be.below(MAX_GROWTH_MIB);
    });
  }
});
