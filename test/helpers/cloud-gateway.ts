/**
 * A gateway whose providers are the fake Bedrock, the fake Vertex, the fake Anthropic/OpenAI upstream
 * and an Azure-style OpenAI provider (`auth_header: api-key`), written in the config format of
 * docs/providers.md. Credentials come from `${VAR}` references, as an operator would write them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { AWS_TEST_CREDENTIALS, startFakeBedrock, type FakeBedrock } from './fake-bedrock';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream';
import { startFakeVertex, type FakeVertex } from './fake-vertex';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from './test-gateway';

export const BEDROCK_MODEL_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
export const VERTEX_MODEL_ID = 'claude-sonnet-4-5@20250929';
export const AZURE_KEY = 'AZURE-SENTINEL-KEY-0123456789';

export interface CloudSetup {
  readonly bedrock: FakeBedrock;
  readonly vertex: FakeVertex;
  readonly fake: FakeUpstream;
  readonly tg: TestGateway;
  stop(): Promise<void>;
}

export function cloudYaml(bedrock: FakeBedrock, vertex: FakeVertex, fake: FakeUpstream, credentialsFile: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  bedrock:
    protocol: bedrock
    region: ${bedrock.region}
    access_key_id: \${AWS_ACCESS_KEY_ID:-}
    secret_access_key: \${AWS_SECRET_ACCESS_KEY:-}
    session_token: \${AWS_SESSION_TOKEN:-}
    base_url: ${bedrock.url}
  vertex:
    protocol: vertex
    project_id: test-project
    region: us-east5
    credentials_file: ${credentialsFile}
    base_url: ${vertex.url}
  anthropic:
    protocol: anthropic
    base_url: ${fake.url}
    api_key: ${PROVIDER_KEYS.anthropic}
  azure:
    protocol: openai
    base_url: ${fake.url}/openai/v1
    api_key: \${AZURE_OPENAI_API_KEY:-}
    auth_header: api-key
models:
  claude-bedrock:
    family: anthropic
    routes: [{ provider: bedrock, upstream_model: "${BEDROCK_MODEL_ID}" }]
    free: true
  claude-vertex:
    family: anthropic
    routes: [{ provider: vertex, upstream_model: "${VERTEX_MODEL_ID}" }]
    free: true
  claude-everywhere:
    family: anthropic
    routes:
      - { provider: bedrock, upstream_model: "${BEDROCK_MODEL_ID}", priority: 0 }
      - { provider: vertex, upstream_model: "${VERTEX_MODEL_ID}", priority: 1 }
      - { provider: anthropic, upstream_model: claude-sonnet-4-5, priority: 2 }
    failover: { max_attempts: 3, backoff_base_ms: 1, backoff_max_ms: 5 }
    free: true
  gpt-azure:
    family: openai
    routes: [{ provider: azure, upstream_model: gpt-4o-deployment }]
    free: true
plugins:
  auth: { failures_per_minute: 0 }
  upstream: { failover: { max_attempts: 1 } }
`;
}

export async function startCloudGateway(logger?: Logger): Promise<CloudSetup> {
  const [bedrock, vertex, fake] = await Promise.all([startFakeBedrock(), startFakeVertex(), startFakeUpstream()]);
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-vertex-'));
  const credentialsFile = path.join(dir, 'vertex-sa.json');
  writeFileSync(credentialsFile, vertex.serviceAccountKey, { mode: 0o600 });
  const env = {
    AWS_ACCESS_KEY_ID: AWS_TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: AWS_TEST_CREDENTIALS.secretAccessKey,
    AWS_SESSION_TOKEN: AWS_TEST_CREDENTIALS.sessionToken,
    AZURE_OPENAI_API_KEY: AZURE_KEY,
  };
  const tg = await startTestGateway({ yaml: cloudYaml(bedrock, vertex, fake, credentialsFile), env, ...(logger !== undefined && { logger }) });
  return {
    bedrock,
    vertex,
    fake,
    tg,
    async stop() {
      await Promise.all([bedrock.close(), vertex.close(), fake.close()]);
      await tg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
