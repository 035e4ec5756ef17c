/**
 * `npm run bench:long-streams`: what one never-ending stream costs the gateway's memory. A provider
 * that never ends its stream (test/helpers/endless-upstream.ts) is read by a fast client through the
 * bench gateway (bench/gateway-main.ts, billed: priced models, the output counted) on the six routes:
 * chat, Messages and Responses clients of an OpenAI model and of a Claude model. For each it prints
 * the gateway's RSS once the first BENCH_WARM_MIB (16) have been relayed, the highest RSS from then
 * until BENCH_STREAM_MIB (1024) have been, the growth between them, and the time (a stream the gateway
 * ends sooner, marked, is measured from its first MiB). Each stream has a gateway of its own. Asserts
 * nothing.
 *
 * Before and after, back to back: pass other package roots (a checkout of an older commit, built) as
 * arguments; each route runs on every root in turn.
 *
 *   node dist/bench/long-streams.js [/path/to/other/checkout ...]
 */
import { request } from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startEndlessUpstream } from '../test/helpers/endless-upstream';
import { rssMiB, startServerProcess } from './processes';

const MIB = 1024 * 1024;
const STREAM_MIB = Number(process.env.BENCH_STREAM_MIB ?? 1024);
const WARM_MIB = Number(process.env.BENCH_WARM_MIB ?? 16);

interface Route {
  readonly name: string;
  readonly path: string;
  readonly body: object;
}

const chatBody = (model: string) => ({ model, stream: true, max_tokens: 4096, messages: [{ role: 'user', content: 'Talk forever.' }] });
const ROUTES: readonly Route[] = [
  { name: 'chat → gpt (native)', path: '/v1/chat/completions', body: chatBody('gpt-bench') },
  { name: 'messages → gpt (translated)', path: '/v1/messages', body: chatBody('gpt-bench') },
  { name: 'responses → gpt (native)', path: '/v1/responses', body: { model: 'gpt-bench', stream: true, input: 'Talk forever.' } },
  { name: 'chat → claude (translated)', path: '/v1/chat/completions', body: chatBody('claude-bench') },
  { name: 'messages → claude (native)', path: '/v1/messages', body: chatBody('claude-bench') },
  { name: 'responses → claude (translated)', path: '/v1/responses', body: { model: 'claude-bench', stream: true, input: 'Talk forever.' } },
];

interface Figures {
  readonly relayedMiB: number;
  readonly warmRss: number;
  readonly maxRss: number;
  readonly seconds: number;
  /** True when the gateway ended the stream before STREAM_MIB. */
  readonly ended: boolean;
}

/** Reads one route until STREAM_MIB or the end, sampling the gateway's RSS every MiB. */
function measure(url: string, key: string, pid: number, route: Route): Promise<Figures> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${url}${route.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let bytes = 0;
      let next = MIB;
      let firstRss = NaN;
      let warmRss = NaN;
      let maxRss = 0;
      const done = (ended: boolean) => {
        const rss = rssMiB(pid);
        // A stream the gateway ended before the warm-up was over is measured from its first MiB.
        const from = Number.isNaN(warmRss) ? firstRss : warmRss;
        resolve({ relayedMiB: bytes / MIB, warmRss: from, maxRss: Math.max(maxRss, rss), seconds: (performance.now() - started) / 1000, ended });
      };
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes < next) return;
        next += MIB;
        const rss = rssMiB(pid);
        if (Number.isNaN(firstRss)) firstRss = rss;
        if (Number.isNaN(warmRss) && bytes >= WARM_MIB * MIB) warmRss = rss;
        maxRss = Math.max(maxRss, rss);
        if (bytes >= STREAM_MIB * MIB) {
          res.removeAllListeners('end');
          req.destroy();
          done(false);
        }
      });
      res.on('end', () => done(true));
      res.on('error', () => undefined);
    });
    req.end(JSON.stringify(route.body));
  });
}

async function main(): Promise<void> {
  const roots = [path.resolve(__dirname, '..', '..'), ...process.argv.slice(2).map((root) => path.resolve(root))];
  const upstream = await startEndlessUpstream();
  console.log(`one never-ending stream per route, read until ${STREAM_MIB} MiB; growth = highest RSS after the first ${WARM_MIB} MiB, less RSS then`);
  console.log(`${'route'.padEnd(32)} ${'tree'.padEnd(16)} ${'relayed MiB'.padStart(12)} ${'RSS MiB'.padStart(9)} ${'max MiB'.padStart(9)} ${'growth'.padStart(8)} ${'s'.padStart(6)}`);
  try {
    for (const route of ROUTES) {
      for (const root of roots) {
        // A gateway per route and tree: what one stream leaves behind does not count against the next.
        const script = path.relative(__dirname, path.join(root, 'dist', 'bench', 'gateway-main.js'));
        const gateway = await startServerProcess<{ url: string; key: string }>(script, [upstream.url, '--billed']);
        try {
          const figures = await measure(gateway.info.url, gateway.info.key, gateway.child.pid!, route);
          const growth = figures.maxRss - figures.warmRss;
          console.log(
            `${route.name.padEnd(32)} ${path.basename(root).padEnd(16)} ${`${figures.relayedMiB.toFixed(0)}${figures.ended ? ' (ended)' : ''}`.padStart(12)} ${figures.warmRss.toFixed(0).padStart(9)} ${figures.maxRss.toFixed(0).padStart(9)} ${`${growth >= 0 ? '+' : ''}${growth.toFixed(0)}`.padStart(8)} ${figures.seconds.toFixed(1).padStart(6)}`,
          );
        } finally {
          gateway.stop();
        }
      }
    }
  } finally {
    await upstream.close();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
