/**
 * Runs a gateway for benchmarks in its own process, in front of the upstream named by argv[2], and
 * prints `{"url": …, "key": …}` on one line when listening. The logger is silent, so the figures are
 * the request path's own.
 *
 *   node gateway-main.js <upstream-url>                  free models, in-memory store
 *   node gateway-main.js <upstream-url> --billed [store] priced models, billing and rate limits on
 *
 * `--billed` is the default chain as a paying deployment runs it: priced models, the bench account
 * credited with a balance it cannot exhaust, and limits per key and per account set so high they
 * never refuse (rpm 10^9) but are still counted on every request. `store` is a store URL
 * (`sqlite:/path/file.db`; in memory when absent).
 *
 * SIGUSR2 runs a full garbage collection when the process was started with --expose-gc, so a leak
 * check can read RSS after it.
 */
import pino from 'pino';
import { issueApiKey } from '../src/auth/issue-key';
import { parseConfig } from '../src/config/load';
import { startGateway } from '../src/gateway';
import { openStore } from '../src/store/open';

const NEVER_REFUSE = '{ rpm: 1000000000, tpm: 1000000000000, concurrency: 1000000 }';

function configText(upstreamUrl: string, billed: boolean, storeUrl: string): string {
  const pricing = billed ? 'price: { input: 3, output: 15 }, max_output_tokens: 4096, context_window: 200000' : 'free: true';
  // BENCH_FLUSH_MS overrides how often charges are written to the ledger (plugins.billing.flush_interval_ms).
  const flush = process.env.BENCH_FLUSH_MS ? `  billing: { flush_interval_ms: ${Number(process.env.BENCH_FLUSH_MS)} }\n` : '';
  const plugins = billed ? `plugins:\n  rate-limit: { per_key: ${NEVER_REFUSE}, per_account: ${NEVER_REFUSE} }\n${flush}` : '';
  return `
providers:
  bench-openai: { protocol: openai, base_url: "${upstreamUrl}/v1", api_key: bench-provider-key }
  bench-anthropic: { protocol: anthropic, base_url: "${upstreamUrl}", api_key: bench-provider-key }
models:
  gpt-bench: { family: openai, routes: [{ provider: bench-openai }], ${pricing} }
  claude-bench: { family: anthropic, routes: [{ provider: bench-anthropic }], ${pricing} }
store: { url: "${storeUrl}" }
${plugins}`;
}

async function main(upstreamUrl: string, flags: readonly string[]): Promise<void> {
  const billed = flags[0] === '--billed';
  const config = parseConfig(configText(upstreamUrl, billed, (billed && flags[1]) || 'sqlite::memory:'), 'bench.yaml', {});
  const store = openStore(config.store);
  await store.migrate();
  const account = await store.createAccount({ name: 'bench', role: 'user' });
  const { key } = await issueApiKey(store, { accountId: account.id, name: 'bench' });
  // 10^9 balance units (in nano-units): more than any benchmark can spend.
  if (billed) await store.credit({ accountId: account.id, amount: 10n ** 18n, kind: 'admin', actor: 'bench', note: 'bench' });
  const gateway = await startGateway({ config, store, port: 0, logger: pino({ level: 'silent' }) });
  process.stdout.write(`${JSON.stringify({ url: gateway.url, key })}\n`);
  // Exit through Node (not a bare signal death) so --cpu-prof can write its profile.
  process.once('SIGTERM', () => process.exit(0));
  process.on('SIGUSR2', () => (globalThis as { gc?: () => void }).gc?.());
}

main(process.argv[2], process.argv.slice(3)).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
