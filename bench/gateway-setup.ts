/**
 * What the benchmark gateways share: the config in front of the fake upstream, the funded bench
 * account with its key, and the request log. bench/gateway-main.ts (one process) and
 * bench/cluster-gateway.ts (`tollgate serve` with workers) both use it, so their rows differ only in
 * how they serve.
 */
import pino, { type Logger } from 'pino';
import { issueApiKey } from '../src/auth/issue-key';
import { createLogger } from '../src/gateway';
import type { Store } from '../src/store/store';

const NEVER_REFUSE = '{ rpm: 1000000000, tpm: 1000000000000, concurrency: 1000000 }';

/**
 * The gateway config: two providers on the fake upstream and a model on each. `billed` prices the
 * models and turns on rate limits per key and per account that never refuse (rpm 10^9) but are
 * counted on every request. `extra` is appended as is (YAML at the top level, e.g. a `server:` block).
 */
export function benchConfigText(upstreamUrl: string, billed: boolean, storeUrl: string, extra = ''): string {
  const pricing = billed ? 'price: { input: 3, output: 15 }, max_output_tokens: 4096, context_window: 200000' : 'free: true';
  // BENCH_FLUSH_MS overrides how often charges are written to the ledger (plugins.billing.flush_interval_ms);
  // BENCH_OUTBOX_BYTES the ledger outbox's bound (plugins.billing.outbox_max_bytes; 0 turns it off).
  const billing = [
    process.env.BENCH_FLUSH_MS ? `flush_interval_ms: ${Number(process.env.BENCH_FLUSH_MS)}` : '',
    process.env.BENCH_OUTBOX_BYTES ? `outbox_max_bytes: ${Number(process.env.BENCH_OUTBOX_BYTES)}` : '',
  ].filter((field) => field !== '');
  const flush = billing.length > 0 ? `  billing: { ${billing.join(', ')} }\n` : '';
  const plugins = billed ? `plugins:\n  rate-limit: { per_key: ${NEVER_REFUSE}, per_account: ${NEVER_REFUSE} }\n${flush}` : '';
  return `
providers:
  bench-openai: { protocol: openai, base_url: "${upstreamUrl}/v1", api_key: bench-provider-key }
  bench-anthropic: { protocol: anthropic, base_url: "${upstreamUrl}", api_key: bench-provider-key }
models:
  gpt-bench: { family: openai, routes: [{ provider: bench-openai }], ${pricing} }
  claude-bench: { family: anthropic, routes: [{ provider: bench-anthropic }], ${pricing} }
store: { url: "${storeUrl}" }
${plugins}${extra}`;
}

/**
 * Creates the bench account in a migrated store and returns its API key. A billed account is credited
 * 10^9 balance units (in nano-units): more than any benchmark can spend.
 */
export async function createBenchAccount(store: Store, billed: boolean): Promise<string> {
  const account = await store.createAccount({ name: 'bench', role: 'user' });
  const { key } = await issueApiKey(store, { accountId: account.id, name: 'bench' });
  if (billed) await store.credit({ accountId: account.id, amount: 10n ** 18n, kind: 'admin', actor: 'bench', note: 'bench' });
  return key;
}

/**
 * The request log as production writes it (JSON lines at info, through pino's asynchronous
 * destination), into the file BENCH_LOG names, /dev/null by default, so its cost is counted.
 * `silent` (or BENCH_LOG=silent) logs nothing, for figures of the request path alone.
 */
export function benchLogger(silent: boolean, file: string = process.env.BENCH_LOG || '/dev/null'): Logger {
  if (silent || file === 'silent') return pino({ level: 'silent' });
  return createLogger(pino.destination({ dest: file, sync: false }));
}
