/**
 * The auth step's cost per request for a cached key, in-process with no network: a key without
 * allowed networks, with a 100-entry list the address matches last (IPv4, then IPv6), and a refused
 * address. The step is the auth plugin's handler as the chain runs it, on a minimal context.
 *
 *   npm run build && node dist/bench/auth-networks.js        (ROUNDS=… to change the sample count)
 */
import { authPlugin } from '../plugins/auth';
import type { PluginKit } from '../plugins/kit';
import { issueApiKey } from '../src/auth/issue-key';
import type { GatewayContext } from '../src/kernel/context';
import { SqliteStore } from '../src/store/sqlite';

const ROUNDS = Number(process.env.ROUNDS ?? 200_000);

function contextFor(key: string, ip: string): GatewayContext {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  // Only what the auth handler reads; the state is refilled by the handler on every call.
  return { ip, state: { endpoint: { family: 'openai' } }, get: (field: string) => headers[field] ?? '' } as unknown as GatewayContext;
}

async function measure(label: string, run: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 5000; i++) await run();
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  const median = samples[Math.floor(samples.length / 2)];
  const p99 = samples[Math.floor(samples.length * 0.99)];
  console.log(`${label.padEnd(58)} median ${median.toFixed(2)} µs  p99 ${p99.toFixed(2)} µs`);
}

async function main(): Promise<void> {
  const store = new SqliteStore(':memory:');
  await store.migrate();
  const account = await store.createAccount({ name: 'bench', role: 'user' });
  // 99 networks that do not hold the addresses below, then the one that does: the worst case of a scan.
  const v4 = [...Array.from({ length: 99 }, (_, i) => `172.${16 + (i % 16)}.${i}.0/24`), '10.0.0.0/8'];
  const v6 = [...Array.from({ length: 99 }, (_, i) => `2001:db8:${(i + 1).toString(16)}::/48`), '2001:db9::/32'];
  const open = await issueApiKey(store, { accountId: account.id, name: 'open' });
  const listedV4 = await issueApiKey(store, { accountId: account.id, name: 'v4', allowedNetworks: v4 });
  const listedV6 = await issueApiKey(store, { accountId: account.id, name: 'v6', allowedNetworks: v6 });
  // setup reads only the store and its section of the config.
  const plugin = await authPlugin.setup({ enabled: true, cache_ttl_ms: 3_600_000, cache_max_entries: 100, failures_per_minute: 0 }, { store } as unknown as PluginKit);
  const next = async () => undefined;
  const step = (ctx: GatewayContext) => () => plugin.handle(ctx, next);

  await measure('no allowed networks', step(contextFor(open.key, '10.1.2.3')));
  await measure('100 IPv4 networks, address matches the last', step(contextFor(listedV4.key, '10.1.2.3')));
  await measure('100 IPv4 networks, IPv4-mapped IPv6 address', step(contextFor(listedV4.key, '::ffff:10.1.2.3')));
  await measure('100 IPv6 networks, address matches the last', step(contextFor(listedV6.key, '2001:db9::7')));
  const refused = contextFor(listedV4.key, '192.0.2.1');
  await measure('100 IPv4 networks, address refused (403 built and thrown)', () => plugin.handle(refused, next).catch(() => undefined));
  await store.close();
}

void main();
