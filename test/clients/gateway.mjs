/**
 * Tollgate for the compatibility suite: the repository's own gateway.yaml (so its model entries and
 * aliases are what the clients meet), its providers pointed at the mock upstream, started in this
 * process from the built dist/ with a fresh in-memory store, one key and one management token.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The shipped gateway.yaml with its two real providers redirected to `upstreamUrl`. */
export function shippedYamlFor(upstreamUrl) {
  const yaml = readFileSync(`${root}/gateway.yaml`, 'utf8');
  const pointed = yaml
    .replace('base_url: https://api.anthropic.com', `base_url: ${upstreamUrl}`)
    .replace('base_url: https://api.openai.com/v1', `base_url: ${upstreamUrl}/v1`)
    .replace('host: 0.0.0.0', 'host: 127.0.0.1');
  if (!pointed.includes(upstreamUrl)) throw new Error('gateway.yaml no longer names the providers this suite redirects');
  return pointed;
}

export async function startTollgate(upstreamUrl) {
  const { startTestGateway } = require(`${root}/dist/test/helpers/test-gateway.js`);
  const tollgate = await startTestGateway({
    yaml: shippedYamlFor(upstreamUrl),
    env: { ANTHROPIC_API_KEY: 'mock-anthropic-key', OPENAI_API_KEY: 'mock-openai-key' },
  });
  // Billing stays on, as users meet it: the key's account gets a balance no case can exhaust.
  await tollgate.store.credit({ accountId: tollgate.accountId, amount: 1_000_000n * 10n ** 9n, kind: 'admin', actor: 'client-suite', note: 'suite balance' });
  // A management token of the same account, for cases that read back what was charged through /api.
  const { hashSecret, newManagementToken } = require(`${root}/dist/src/admin/secrets.js`);
  const managementToken = newManagementToken();
  await tollgate.store.createSession({ accountId: tollgate.accountId, hash: hashSecret(managementToken), kind: 'token', name: 'client-suite', expiresAt: null });
  return Object.assign(tollgate, { managementToken });
}
