/**
 * Runs a gateway for benchmarks in its own process, in front of the upstream named by argv[2], and
 * prints `{"url": …, "key": …}` on one line when listening. The request log is on, as in production:
 * JSON lines into the file BENCH_LOG names (/dev/null by default), so its cost is counted.
 *
 *   node gateway-main.js <upstream-url>                  free models, in-memory store
 *   node gateway-main.js <upstream-url> --billed [store] priced models, billing and rate limits on
 *   … --silent-log                                       no request log (also BENCH_LOG=silent)
 *
 * `--billed` is the default chain as a paying deployment runs it: priced models, the bench account
 * credited with a balance it cannot exhaust, and limits per key and per account set so high they
 * never refuse (rpm 10^9) but are still counted on every request. `store` is a store URL
 * (`sqlite:/path/file.db`; in memory when absent).
 *
 * SIGUSR2 runs a full garbage collection when the process was started with --expose-gc, so a leak
 * check can read RSS after it.
 */
import { parseConfig } from '../src/config/load';
import { startGateway } from '../src/gateway';
import { applyHeapSettings } from '../src/heap-settings';
import { openStore } from '../src/store/open';
import { serveLoopProbe } from './loop-probe';
import { benchConfigText, benchLogger, createBenchAccount } from './gateway-setup';

async function main(upstreamUrl: string, args: readonly string[]): Promise<void> {
  const silent = args.includes('--silent-log');
  const flags = args.filter((arg) => arg !== '--silent-log');
  const billed = flags[0] === '--billed';
  const config = parseConfig(benchConfigText(upstreamUrl, billed, (billed && flags[1]) || 'sqlite::memory:'), 'bench.yaml', {});
  // As `tollgate serve` does: the heap settings are part of how the gateway runs.
  applyHeapSettings(config.server);
  const store = openStore(config.store);
  await store.migrate();
  const key = await createBenchAccount(store, billed);
  const gateway = await startGateway({ config, store, port: 0, logger: benchLogger(silent) });
  serveLoopProbe();
  process.stdout.write(`${JSON.stringify({ url: gateway.url, key })}\n`);
  // Exit through Node (not a bare signal death) so --cpu-prof can write its profile.
  process.once('SIGTERM', () => process.exit(0));
  process.on('SIGUSR2', () => (globalThis as { gc?: () => void }).gc?.());
}

main(process.argv[2], process.argv.slice(3)).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
