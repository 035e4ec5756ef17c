/**
 * What a gateway loads is what its configuration uses: ioredis only with Redis, the OpenTelemetry SDK
 * only with tracing on, the AWS SDK only with a Bedrock provider, pg only on PostgreSQL, the tokenizer
 * never in the main thread, the Stripe library only with card payments. Each is memory (about 24 MiB
 * of the idle RSS together) and start-up time that a deployment without it should not spend. Checked on `tollgate serve` itself, through a
 * preloaded module that lists, at exit, the packages the process loaded.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { request } from 'undici';
import { PACKAGE_ROOT } from '../../src/paths';
import { exitCode, serveChild, type ServedChild } from '../helpers/serve-child';

const PRELOAD = path.join(__dirname, '..', 'helpers', 'loaded-packages-preload.js');

/**
 * The packages a configuration may only load when it uses them (the second factor's otpauth and
 * qrcode, WebSocket mode's ws, at their first use). `@opentelemetry/api` is not one:
 * prom-client's default metrics load it (for exemplars), and it is small.
 */
const OPTIONAL = /^(ioredis|pg|gpt-tokenizer|stripe|qrcode|pngjs|otpauth|ws|@opentelemetry\/(?!api$).+|@smithy\/.+|@aws-sdk\/.+)$/;

/** Serves `dir` with the preload, runs `use` against it, stops it with SIGTERM and returns what it loaded. */
async function packagesLoaded(dir: string, use: (served: ServedChild) => Promise<void>): Promise<string[]> {
  const listFile = path.join(dir, 'loaded.json');
  const served = await serveChild(dir, { nodeArgs: ['--require', PRELOAD], env: { TOLLGATE_TEST_LOADED_PACKAGES: listFile } });
  try {
    await use(served);
  } finally {
    const exited = exitCode(served.child);
    served.child.kill('SIGTERM');
    expect(await exited, served.stdout()).to.equal(0);
  }
  return JSON.parse(readFileSync(listFile, 'utf8')) as string[];
}

async function post(served: ServedChild, endpoint: string, body: unknown): Promise<number> {
  const response = await request(`${served.url}${endpoint}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${served.key}`, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  await response.body.dump();
  return response.statusCode;
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('e2e: optional packages are loaded only by the configurations that use them', function () {
  this.timeout(60_000);
  let dir: string;

  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'tollgate-packages-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('the default gateway.yaml serving both protocols loads none of them', async () => {
    copyFileSync(path.join(PACKAGE_ROOT, 'gateway.yaml'), path.join(dir, 'gateway.yaml'));
    const loaded = await packagesLoaded(dir, async (served) => {
      const messages = [{ role: 'user', content: 'Hello there' }];
      expect(await post(served, '/v1/chat/completions', { model: 'tollgate-echo', messages })).to.equal(200);
      expect(await post(served, '/v1/chat/completions', { model: 'tollgate-echo', messages, stream: true })).to.equal(200);
      expect(await post(served, '/v1/messages', { model: 'tollgate-echo', max_tokens: 64, messages })).to.equal(200);
    });
    // The list is real: the packages every gateway uses are in it.
    expect(loaded).to.include.members(['koa', 'undici', 'pino', 'yaml', 'opossum', 'prom-client']);
    expect(loaded.filter((name) => OPTIONAL.test(name))).to.deep.equal([]);
  });

  it('Redis, tracing and a Bedrock provider load ioredis, the OpenTelemetry SDK and the AWS signer', async () => {
    const port = await closedPort();
    writeFileSync(
      path.join(dir, 'gateway.yaml'),
      `version: 1
store: { url: "sqlite:./data/tollgate.db" }
redis: { url: "redis://127.0.0.1:${port}" }
telemetry: { traces: { endpoint: "http://127.0.0.1:${port}/v1/traces" } }
providers:
  echo: { protocol: echo }
  bedrock: { protocol: bedrock, region: us-east-1, access_key_id: AKIDEXAMPLE, secret_access_key: not-a-real-secret }
models:
  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }
  claude-on-bedrock: { family: anthropic, routes: [{ provider: bedrock, upstream_model: anthropic.claude-v1 }], free: true }
`,
    );
    const loaded = await packagesLoaded(dir, async () => undefined);
    expect(loaded).to.include.members(['ioredis', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@aws-sdk/credential-providers', '@smithy/signature-v4']);
    expect(loaded).to.not.include.members(['pg', 'gpt-tokenizer']);
  });

  it('card payments load the Stripe library at their first use, and nothing else optional', async () => {
    const port = await closedPort();
    writeFileSync(
      path.join(dir, 'gateway.yaml'),
      `version: 1
store: { url: "sqlite:./data/tollgate.db" }
payments: { stripe: { secret_key: sk_test_x, webhook_secret: whsec_x, currency: usd, api_base: "http://127.0.0.1:${port}" } }
providers:
  echo: { protocol: echo }
models:
  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }
`,
    );
    const loaded = await packagesLoaded(dir, async (served) => {
      const response = await request(`${served.url}/api/payments/stripe/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
        body: '{}',
      });
      expect(response.statusCode).to.equal(400);
      await response.body.dump();
    });
    expect(loaded.filter((name) => OPTIONAL.test(name))).to.deep.equal(['stripe']);
  });
});
