/**
 * Google Vertex AI end to end: the official SDKs as clients, the gateway in front of a fake Vertex
 * whose token endpoint checks the RS256 assertion of a service-account key made for the test and
 * whose model endpoints refuse unknown or expired tokens. Messages plain and streamed, chat and
 * Responses translated, count_tokens, Google's errors, token reuse and refresh.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { startCloudGateway, VERTEX_MODEL_ID, type CloudSetup } from '../helpers/cloud-gateway';
import { anthropicToolUse } from '../helpers/upstream-replies';

const MODELS_PATH = '/v1/projects/test-project/locations/us-east5/publishers/anthropic/models';
const MODEL_PATH = `${MODELS_PATH}/${encodeURIComponent(VERTEX_MODEL_ID)}`;

describe('e2e: Google Vertex AI provider', () => {
  let cloud: CloudSetup;
  let anthropic: Anthropic;
  let openai: OpenAI;

  before(async () => {
    cloud = await startCloudGateway();
    anthropic = new Anthropic({ baseURL: cloud.tg.url, apiKey: cloud.tg.key, maxRetries: 0 });
    openai = new OpenAI({ baseURL: `${cloud.tg.url}/v1`, apiKey: cloud.tg.key, maxRetries: 0 });
  });

  after(async () => cloud?.stop());

  afterEach(() => {
    for (const request of cloud.vertex.requests) {
      expect(JSON.stringify(request.headers) + request.body.toString('utf8')).to.not.include(cloud.tg.key);
      expect(request.headers).to.not.have.property('x-api-key');
    }
    cloud.vertex.requests.length = 0;
  });

  it('answers a plain Messages request through rawPredict, the model moved into the URL', async () => {
    const message = await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] });
    expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello from the fake upstream.' }]);
    const [request] = cloud.vertex.requests;
    expect(request.path).to.equal(`${MODEL_PATH}:rawPredict`);
    const body = request.json();
    expect(body).to.not.have.property('model');
    expect(body.anthropic_version).to.equal('vertex-2023-10-16');
    expect(request.headers.authorization).to.match(/^Bearer ya29\.test-\d+$/);
  });

  it('streams through streamRawPredict with stream: true kept in the body, and forwards anthropic-beta', async () => {
    const stream = anthropic.messages.stream(
      { model: 'claude-vertex', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] },
      { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
    );
    const message = await stream.finalMessage();
    expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello from the fake upstream.' }]);
    const [request] = cloud.vertex.requests;
    expect(request.path).to.equal(`${MODEL_PATH}:streamRawPredict`);
    expect(request.json().stream).to.equal(true);
    expect(request.headers['anthropic-beta']).to.equal('context-1m-2025-08-07');
  });

  it('carries tools, and serves chat and Responses clients translated onto Vertex', async () => {
    cloud.vertex.enqueue(anthropicToolUse({ name: 'get_weather', input: { city: 'Oslo' }, toolUseId: 'toolu_vertex' }));
    const completion = await openai.chat.completions.create({
      model: 'claude-vertex',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    });
    const call = completion.choices[0].message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function : null).to.deep.equal({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    expect(cloud.vertex.requests[0].json().tools).to.have.length(1);

    const stream = await openai.chat.completions.create({ model: 'claude-vertex', stream: true, messages: [{ role: 'user', content: 'Hi!' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).to.equal('Hello from the fake upstream.');
    expect(cloud.vertex.requests[1].path).to.equal(`${MODEL_PATH}:streamRawPredict`);

    const response = await openai.responses.create({ model: 'claude-vertex', input: 'Hi!' });
    expect(response.output_text).to.equal('Hello from the fake upstream.');
  });

  it('counts tokens through count-tokens:rawPredict, the model kept in the body', async () => {
    const count = await anthropic.messages.countTokens({ model: 'claude-vertex', messages: [{ role: 'user', content: 'Count me.' }] });
    expect(count.input_tokens).to.equal(42);
    const [request] = cloud.vertex.requests;
    expect(request.path).to.equal(`${MODELS_PATH}/count-tokens:rawPredict`);
    expect(request.json()).to.deep.include({ model: VERTEX_MODEL_ID, anthropic_version: 'vertex-2023-10-16' });
  });

  it('answers Google\'s RESOURCE_EXHAUSTED as upstream overloaded (503, not the client\'s own 429)', async () => {
    cloud.vertex.enqueue({ status: 429, googleStatus: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.' });
    const error = await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
    // docs/faults.md#c3: the provider's quota is not the client's rate limit.
    expect(error).to.be.instanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).to.equal(503);
    expect(((error as InstanceType<typeof Anthropic.APIError>).error as { error: { type: string } }).error.type).to.equal('overloaded_error');
  });

  it('reuses one access token across requests, and fetches a new one before the old one expires', async () => {
    const before = cloud.vertex.tokensIssued.length;
    for (let i = 0; i < 3; i++) await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] });
    const tokens = new Set(cloud.vertex.requests.map((request) => request.headers.authorization));
    expect(tokens.size).to.equal(1);
    expect(cloud.vertex.tokensIssued.length).to.equal(Math.max(before, 1));

    // From now on tokens live 302 s: the gateway refreshes 2 s into a token's life (five minutes early).
    cloud.vertex.tokenLifetimeSeconds = 302;
    cloud.vertex.expireTokens();
    const refused = await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
    // The expired token is refused upstream: the provider's credentials, never the client's fault.
    expect((refused as { status?: number }).status).to.equal(502);

    // The refusal dropped the cached token: the next request gets a new one.
    cloud.vertex.requests.length = 0;
    await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] });
    const fresh = cloud.vertex.tokensIssued.length;
    expect(cloud.vertex.requests[0].headers.authorization).to.equal(`Bearer ${cloud.vertex.tokensIssued[fresh - 1]}`);

    // Past its refresh point (2 s) the token is replaced before the provider would refuse it.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await anthropic.messages.create({ model: 'claude-vertex', max_tokens: 8, messages: [{ role: 'user', content: 'Hi!' }] });
    expect(cloud.vertex.tokensIssued.length).to.equal(fresh + 1);
    expect(cloud.vertex.requests[1].headers.authorization).to.equal(`Bearer ${cloud.vertex.tokensIssued[fresh]}`);
  });
});
