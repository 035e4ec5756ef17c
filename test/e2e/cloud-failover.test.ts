/**
 * Failover across clouds and what never leaks: a claude model served by Bedrock, then Vertex, then
 * Anthropic; Azure OpenAI's `api-key`; no client key upstream; no AWS secret, private key or provider
 * key in the debug log; wrong AWS credentials refused as the gateway's problem.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { AZURE_KEY, cloudYaml, startCloudGateway, type CloudSetup } from '../helpers/cloud-gateway';
import { captureLogger } from '../helpers/capture-logger';
import { AWS_TEST_CREDENTIALS, startFakeBedrock } from '../helpers/fake-bedrock';
import { startFakeUpstream } from '../helpers/fake-upstream';
import { startFakeVertex } from '../helpers/fake-vertex';
import { PROVIDER_KEYS, startTestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

describe('e2e: failover across Bedrock, Vertex and Anthropic', () => {
  const lines: string[] = [];
  let cloud: CloudSetup;
  let anthropic: Anthropic;

  before(async () => {
    cloud = await startCloudGateway(captureLogger('debug', lines));
    anthropic = new Anthropic({ baseURL: cloud.tg.url, apiKey: cloud.tg.key, maxRetries: 0 });
  });

  after(async () => cloud?.stop());

  afterEach(() => {
    cloud.bedrock.requests.length = 0;
    cloud.vertex.requests.length = 0;
    cloud.fake.reset();
  });

  it('moves from a throttled Bedrock to an unavailable Vertex to Anthropic, and answers from Anthropic', async () => {
    cloud.bedrock.enqueue({ status: 429, exception: 'ThrottlingException', message: 'Too many requests.' });
    cloud.vertex.enqueue({ status: 503, googleStatus: 'UNAVAILABLE', message: 'The service is currently unavailable.' });
    const message = await anthropic.messages.create({ model: 'claude-everywhere', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] });
    expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello from the fake upstream.' }]);
    expect(cloud.bedrock.requests).to.have.length(1);
    expect(cloud.vertex.requests).to.have.length(1);
    expect(cloud.fake.requests).to.have.length(1);
    expect(cloud.fake.requests[0].json()).to.include({ model: 'claude-sonnet-4-5' });
    expect(cloud.fake.requests[0].headers['x-api-key']).to.equal(PROVIDER_KEYS.anthropic);
  });

  it('fails over a streamed chat client the same way, each attempt in its provider\'s wire format', async () => {
    cloud.bedrock.enqueue({ status: 503, exception: 'ServiceUnavailableException', message: 'Service unavailable.' });
    const openai = new OpenAI({ baseURL: `${cloud.tg.url}/v1`, apiKey: cloud.tg.key, maxRetries: 0 });
    const stream = await openai.chat.completions.create({ model: 'claude-everywhere', stream: true, messages: [{ role: 'user', content: 'Hi!' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).to.equal('Hello from the fake upstream.');
    expect(cloud.bedrock.requests).to.have.length(1);
    expect(cloud.vertex.requests[0].path).to.match(/:streamRawPredict$/);
    expect(cloud.fake.requests).to.have.length(0);
  });

  it('does not fail over on a client error: a ValidationException is the answer', async () => {
    cloud.bedrock.enqueue({ status: 400, exception: 'ValidationException', message: 'max_tokens: must be positive' });
    const error = await anthropic.messages.create({ model: 'claude-everywhere', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Anthropic.BadRequestError);
    expect(cloud.vertex.requests).to.have.length(0);
    expect(cloud.fake.requests).to.have.length(0);
  });

  it('sends the Azure key as api-key, never as Authorization, to the deployment base URL', async () => {
    cloud.fake.enqueue(chatCompletion({ text: 'From Azure.' }));
    const openai = new OpenAI({ baseURL: `${cloud.tg.url}/v1`, apiKey: cloud.tg.key, maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: 'gpt-azure', messages: [{ role: 'user', content: 'Hi!' }] });
    expect(completion.choices[0].message.content).to.equal('From Azure.');
    const [request] = cloud.fake.requests;
    expect(request.path).to.equal('/openai/v1/chat/completions');
    expect(request.headers['api-key']).to.equal(AZURE_KEY);
    expect(request.headers).to.not.have.property('authorization');
    expect(request.json()).to.include({ model: 'gpt-4o-deployment' });
  });

  it('never lets the client key reach a provider, nor a secret reach the debug log', async () => {
    await anthropic.messages.create({ model: 'claude-bedrock', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] });
    await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] });
    const upstream = [...cloud.bedrock.requests, ...cloud.vertex.requests].map((request) => JSON.stringify(request.headers) + request.body.toString('utf8'));
    for (const seen of upstream) expect(seen).to.not.include(cloud.tg.key);
    const log = lines.join('\n');
    expect(lines.length).to.be.greaterThan(0);
    for (const secret of [AWS_TEST_CREDENTIALS.secretAccessKey, AWS_TEST_CREDENTIALS.sessionToken, AZURE_KEY, PROVIDER_KEYS.anthropic, cloud.tg.key, 'PRIVATE KEY', cloud.vertex.tokensIssued[0]]) {
      expect(log, secret).to.not.include(secret);
    }
    const privateKeyBody = cloud.vertex.privateKey.split('\n')[1];
    expect(log).to.not.include(privateKeyBody);
  });
});

describe('e2e: a Bedrock provider with wrong AWS credentials', () => {
  it('answers 502 (the gateway\'s credentials were refused) and names no secret', async () => {
    const [bedrock, vertex, fake] = await Promise.all([startFakeBedrock(), startFakeVertex(), startFakeUpstream()]);
    const tg = await startTestGateway({
      yaml: cloudYaml(bedrock, vertex, fake, '/nonexistent/vertex-sa.json'),
      env: { AWS_ACCESS_KEY_ID: AWS_TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: 'not-the-secret-the-fake-knows' },
    });
    try {
      const client = new Anthropic({ baseURL: tg.url, apiKey: tg.key, maxRetries: 0 });
      const error = await client.messages.create({ model: 'claude-bedrock', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
      expect((error as { status?: number }).status).to.equal(502);
      expect(bedrock.requests).to.have.length(1);
      expect(bedrock.requests[0].signatureValid).to.equal(false);
      expect(JSON.stringify((error as { error?: unknown }).error)).to.not.include('not-the-secret');

      // A key file that cannot be read fails the Vertex request the same way, naming no path.
      const vertexError = await client.messages.create({ model: 'claude-vertex', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
      expect((vertexError as { status?: number }).status).to.equal(502);
      expect(JSON.stringify((vertexError as { error?: unknown }).error)).to.not.include('nonexistent');
      expect(vertex.requests).to.have.length(0);
    } finally {
      await Promise.all([bedrock.close(), vertex.close(), fake.close()]);
      await tg.stop();
    }
  });
});

describe('e2e: a Bedrock provider without keys in gateway.yaml', () => {
  const saved: Record<string, string | undefined> = {};
  const ENV = { AWS_ACCESS_KEY_ID: AWS_TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: AWS_TEST_CREDENTIALS.secretAccessKey, AWS_SESSION_TOKEN: AWS_TEST_CREDENTIALS.sessionToken };

  before(() => {
    for (const [name, value] of Object.entries(ENV)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  });

  after(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('signs with the default AWS credential chain (here: the process environment)', async () => {
    const [bedrock, vertex, fake] = await Promise.all([startFakeBedrock(), startFakeVertex(), startFakeUpstream()]);
    // gateway.yaml's ${AWS_…:-} references resolve against an empty environment: the keys stay empty.
    const tg = await startTestGateway({ yaml: cloudYaml(bedrock, vertex, fake, '/nonexistent/vertex-sa.json'), env: {} });
    try {
      const client = new Anthropic({ baseURL: tg.url, apiKey: tg.key, maxRetries: 0 });
      const message = await client.messages.create({ model: 'claude-bedrock', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] });
      expect(message.content).to.have.length(1);
      expect(bedrock.requests).to.have.length(1);
      expect(bedrock.requests[0].signatureValid).to.equal(true);
      expect(bedrock.requests[0].headers['x-amz-security-token']).to.equal(AWS_TEST_CREDENTIALS.sessionToken);
    } finally {
      await Promise.all([bedrock.close(), vertex.close(), fake.close()]);
      await tg.stop();
    }
  });
});
