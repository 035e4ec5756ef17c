/**
 * Runs a gateway for benchmarks in its own process, in front of the upstream named by argv[2], and
 * prints `{"url": …, "key": …}` on one line when listening. The store is in memory and the logger
 * silent, so the figures are the request path's own.
 */
import pino from 'pino';
import { issueApiKey } from '../src/auth/issue-key';
import { parseConfig } from '../src/config/load';
import { startGateway } from '../src/gateway';
import { openStore } from '../src/store/open';

async function main(upstreamUrl: string): Promise<void> {
  const config = parseConfig(
    `
providers:
  bench-openai: { protocol: openai, base_url: "${upstreamUrl}/v1", api_key: bench-provider-key }
  bench-anthropic: { protocol: anthropic, base_url: "${upstreamUrl}", api_key: bench-provider-key }
models:
  gpt-bench: { family: openai, routes: [{ provider: bench-openai }], free: true }
  claude-bench: { family: anthropic, routes: [{ provider: bench-anthropic }], free: true }
store: { url: "sqlite::memory:" }
`,
    'bench.yaml',
    {},
  );
  const store = openStore(config.store);
  await store.migrate();
  const account = await store.createAccount({ name: 'bench', role: 'user' });
  const { key } = await issueApiKey(store, { accountId: account.id, name: 'bench' });
  const gateway = await startGateway({ config, store, port: 0, logger: pino({ level: 'silent' }) });
  process.stdout.write(`${JSON.stringify({ url: gateway.url, key })}\n`);
  // Exit through Node (not a bare signal death) so --cpu-prof can write its profile.
  process.once('SIGTERM', () => process.exit(0));
}

main(process.argv[2]).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
