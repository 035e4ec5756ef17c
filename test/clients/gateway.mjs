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

/**
 * The shipped gateway.yaml with its two real providers redirected to `upstreamUrl`; `server` holds
 * extra `server:` settings (YAML lines, e.g. `websocket: false`).
 */
export function shippedYamlFor(upstreamUrl, server = []) {
  const yaml = readFileSync(`${root}/gateway.yaml`, 'utf8');
  const pointed = yaml
    .replace('\nserver:\n', `\nserver:\n${server.map((line) => `  ${line}\n`).join('')}`)
    .replace('base_url: https://api.anthropic.com', `base_url: ${upstreamUrl}`)
    .replace('base_url: https://api.openai.com/v1', `base_url: ${upstreamUrl}/v1`)
    .replace('host: 0.0.0.0', 'host: 127.0.0.1');
  if (server.length > 0 && !pointed.includes(server[0])) throw new Error('gateway.yaml no longer has the server block this suite extends');
  if (!pointed.includes(upstreamUrl)) throw new Error('gateway.yaml no longer names the providers this suite redirects');
  return pointed;
}

/**
 * Tollgate for the suite; `server` as for `shippedYamlFor`. `transport` lists, in order, how clients
 * reached /v1/responses: `{ kind: 'upgrade' }` for a WebSocket handshake (whatever it was answered),
 * `{ kind: 'post' }` for an HTTP POST, so a case can tell a socket from an HTTP fallback.
 */
export async function startTollgate(upstreamUrl, { server = [] } = {}) {
  const { startTestGateway } = require(`${root}/dist/test/helpers/test-gateway.js`);
  const tollgate = await startTestGateway({
    yaml: shippedYamlFor(upstreamUrl, server),
    env: { ANTHROPIC_API_KEY: 'mock-anthropic-key', OPENAI_API_KEY: 'mock-openai-key' },
  });
  const transport = [];
  const responses = (req) => (req.url ?? '').split('?')[0] === '/v1/responses';
  tollgate.gateway.server.on('upgrade', (req) => {
    if (responses(req)) transport.push({ kind: 'upgrade', at: Date.now() });
  });
  tollgate.gateway.server.on('request', (req) => {
    if (responses(req) && req.method === 'POST') transport.push({ kind: 'post', at: Date.now() });
  });
  // Billing stays on, as users meet it: the key's account gets a balance no case can exhaust.
  await tollgate.store.credit({ accountId: tollgate.accountId, amount: 1_000_000n * 10n ** 9n, kind: 'admin', actor: 'client-suite', note: 'suite balance' });
  // A management token of the same account, for cases that read back what was charged through /api.
  const { hashSecret, newManagementToken } = require(`${root}/dist/src/admin/secrets.js`);
  const managementToken = newManagementToken();
  await tollgate.store.createSession({ accountId: tollgate.accountId, hash: hashSecret(managementToken), kind: 'token', name: 'client-suite', expiresAt: null });
  return Object.assign(tollgate, { managementToken, transport });
}
