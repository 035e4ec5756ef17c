/**
 * A gateway for end-to-end tests: port 0, a silent logger, an in-memory SQLite store with one fresh
 * account and key, and a gateway.yaml whose providers point at the fake upstream.
 *
 *   const fake = await startFakeUpstream();
 *   const tg = await startTestGateway({ upstreamUrl: fake.url });
 *   new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: tg.key });
 */
import pino, { type Logger } from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { loadConfigFile, parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';

/**
 * The provider keys of the default YAML: sentinels that must never reach a client
 * (docs/faults.md#invariants).
 */
export const PROVIDER_KEYS = {
  anthropic: 'PROVIDER-SENTINEL-KEY-anthropic',
  openai: 'PROVIDER-SENTINEL-KEY-openai',
} as const;

/** The common stem of both sentinels, for "appears nowhere" checks. */
export const PROVIDER_SENTINEL = 'PROVIDER-SENTINEL-KEY';

/** The default limits, small so that limit tests stay cheap. */
export const TEST_MAX_BODY_BYTES = 65536;
export const TEST_MAX_JSON_DEPTH = 32;

/** A port nothing listens on, for a gateway started without a fake upstream. */
const NOWHERE = 'http://127.0.0.1:9';

export interface TestGatewayOptions {
  /** Where the `anthropic` and `openai` providers point (the fake upstream's `url`). */
  readonly upstreamUrl?: string;
  /** A whole gateway.yaml instead of the default one. */
  readonly yaml?: string;
  /** The environment `${VAR}` references resolve against; empty by default, never `process.env`. */
  readonly env?: Record<string, string>;
  /** A gateway.yaml file instead of `yaml`; `gateway.reload()` reads it again. */
  readonly configFile?: string;
  /** Silent by default. */
  readonly logger?: Logger;
  /** Open the store the config names (a test database) instead of a fresh in-memory SQLite one. */
  readonly storeFromConfig?: boolean;
}

interface CreatedKey {
  readonly key: string;
  readonly id: string;
}

export interface TestGateway {
  readonly gateway: Gateway;
  /** The gateway's origin, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** A valid `sk-` key of `accountId`. */
  readonly key: string;
  /** The store id of `key` (for `store.revokeKey`). */
  readonly keyId: string;
  readonly accountId: string;
  readonly store: Store;
  /** Issues another key for the same account (or `accountId`), optionally expiring at `expiresAt`. */
  createKey(options?: { accountId?: string; name?: string; expiresAt?: Date }): Promise<CreatedKey>;
  /** Stops the gateway and closes the store. */
  stop(): Promise<void>;
}

/** The default gateway.yaml of the e2e suite, its providers pointing at `upstreamUrl`. */
export function defaultTestYaml(upstreamUrl: string): string {
  const base = upstreamUrl.replace(/\/+$/, '');
  return `
version: 1
server:
  host: 127.0.0.1
  max_body_bytes: ${TEST_MAX_BODY_BYTES}
  max_json_depth: ${TEST_MAX_JSON_DEPTH}
  # Tests stop gateways by the hundred: no window in which readiness says 503 before the listener closes.
  shutdown_unready_ms: 0
store:
  url: "sqlite::memory:"
providers:
  anthropic:
    protocol: anthropic
    base_url: ${base}
    api_key: ${PROVIDER_KEYS.anthropic}
  openai:
    protocol: openai
    base_url: ${base}/v1
    api_key: ${PROVIDER_KEYS.openai}
  nokey:
    protocol: anthropic
    base_url: ${base}
    api_key: ""
  echo:
    protocol: echo
models:
  claude-sonnet-5:
    family: anthropic
    routes:
      - provider: anthropic
    free: true
  claude-renamed:
    family: anthropic
    routes:
      - provider: anthropic
        upstream_model: claude-upstream-id
    free: true
  gpt-test:
    family: openai
    routes:
      - provider: openai
    free: true
  claude-nokey:
    family: anthropic
    routes:
      - provider: nokey
    free: true
  tollgate-echo:
    family: openai
    routes:
      - provider: echo
    free: true
plugins:
  # Suites send many wrong keys on purpose; the per-address limit has its own suite (auth-failures).
  auth: { failures_per_minute: 0 }
  # One attempt, so each scripted upstream answer is what the client gets; failover has its own suite.
  upstream: { failover: { max_attempts: 1 } }
`;
}

let accounts = 0;

/** Issues a key for `accountId` straight into the store, as `tollgate key create` would. */
async function issueKey(store: Store, accountId: string, name: string | null, expiresAt: Date | null = null): Promise<CreatedKey> {
  const { key, record } = await issueApiKey(store, { accountId, name, expiresAt });
  return { key, id: record.id };
}

/** Starts a gateway on a free port with a fresh in-memory store, one account and one key. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const env = { ...options.env };
  const { configFile } = options;
  const loadConfig = (file: string) => loadConfigFile(file, env);
  const config =
    configFile === undefined
      ? parseConfig(options.yaml ?? defaultTestYaml(options.upstreamUrl ?? NOWHERE), 'test-gateway.yaml', env)
      : loadConfig(configFile);
  const store = openStore(options.storeFromConfig === true ? config.store : { url: 'sqlite::memory:' });
  await store.migrate();
  accounts += 1;
  const account = await store.createAccount({ name: `e2e-account-${accounts}`, role: 'user' });
  const first = await issueKey(store, account.id, 'e2e');

  let gateway: Gateway;
  try {
    const logger = options.logger ?? pino({ level: 'silent' });
    gateway = await startGateway({ config, configFile, loadConfig, port: 0, store, logger });
  } catch (err) {
    await store.close();
    throw err;
  }

  return {
    gateway,
    url: gateway.url,
    key: first.key,
    keyId: first.id,
    accountId: account.id,
    store,
    createKey: (keyOptions = {}) =>
      issueKey(store, keyOptions.accountId ?? account.id, keyOptions.name ?? null, keyOptions.expiresAt ?? null),
    async stop() {
      // No unready window: suites stop gateways by the hundred, and nothing probes them.
      await gateway.stop({ graceMs: 500, unreadyMs: 0 });
      await store.close();
    },
  };
}
