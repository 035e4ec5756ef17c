/**
 * AWS Bedrock end to end: the official SDKs as clients, the gateway in front of a fake Bedrock that
 * checks the SigV4 signature of every request and streams AWS event-stream messages. Messages plain,
 * streamed and with tools; chat and Responses clients translated onto Bedrock; count_tokens through
 * CountTokens; Bedrock's exceptions in the client's error shape; an in-stream exception.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { BEDROCK_MODEL_ID, startCloudGateway, type CloudSetup } from '../helpers/cloud-gateway';
import { anthropicStream, anthropicToolUse } from '../helpers/upstream-replies';

const BEDROCK_PATH = `/model/${encodeURIComponent(BEDROCK_MODEL_ID)}`;

describe('e2e: AWS Bedrock provider', () => {
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
    // Every request the fake saw was signed correctly, and none carried the client's key.
    for (const request of cloud.bedrock.requests) {
      expect(request.signatureValid, request.path).to.equal(true);
      expect(JSON.stringify(request.headers) + request.body.toString('utf8')).to.not.include(cloud.tg.key);
    }
    cloud.bedrock.requests.length = 0;
  });

  it('answers a plain Messages request through InvokeModel, the model moved into the URL and the version into the body', async () => {
    const message = await anthropic.messages.create(
      { model: 'claude-bedrock', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi!' }] },
      { headers: { 'anthropic-beta': 'context-1m-2025-08-07, interleaved-thinking-2025-05-14' } },
    );
    expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello from the fake upstream.' }]);
    expect(message.usage.input_tokens).to.equal(12);
    const [request] = cloud.bedrock.requests;
    expect(request.path).to.equal(`${BEDROCK_PATH}/invoke`);
    const body = request.json();
    expect(body).to.not.have.property('model');
    expect(body).to.not.have.property('stream');
    expect(body.anthropic_version).to.equal('bedrock-2023-05-31');
    expect(body.anthropic_beta).to.deep.equal(['context-1m-2025-08-07', 'interleaved-thinking-2025-05-14']);
    expect(body.system).to.equal('Be brief.');
    expect(request.headers['x-amz-security-token']).to.equal('AWS-SESSION-SENTINEL-token');
    expect(request.headers.authorization).to.match(/^AWS4-HMAC-SHA256 Credential=AKIDTESTONLY0000\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    expect(request.headers).to.not.have.property('x-api-key');
    expect(request.headers).to.not.have.property('anthropic-version');
  });

  it('streams a Messages reply from AWS event-stream as Anthropic SSE', async () => {
    const stream = anthropic.messages.stream({ model: 'claude-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] });
    const texts: string[] = [];
    stream.on('text', (text) => texts.push(text));
    const message = await stream.finalMessage();
    expect(texts.join('')).to.equal('Hello from the fake upstream.');
    expect(texts.length).to.be.greaterThan(1);
    expect(message.stop_reason).to.equal('end_turn');
    expect(message.usage.output_tokens).to.be.greaterThan(0);
    expect(cloud.bedrock.requests[0].path).to.equal(`${BEDROCK_PATH}/invoke-with-response-stream`);
  });

  it('carries tools both ways', async () => {
    cloud.bedrock.enqueue(anthropicToolUse({ name: 'get_weather', input: { city: 'Paris' }, toolUseId: 'toolu_bedrock' }));
    const tools = [{ name: 'get_weather', description: 'Weather by city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const message = await anthropic.messages.create({ model: 'claude-bedrock', max_tokens: 64, tools, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    expect(message.stop_reason).to.equal('tool_use');
    expect(message.content.find((block) => block.type === 'tool_use')).to.deep.include({ id: 'toolu_bedrock', name: 'get_weather', input: { city: 'Paris' } });
    expect(cloud.bedrock.requests[0].json().tools).to.deep.equal(tools);
  });

  it('serves a chat client, plain and streamed, translated onto Bedrock', async () => {
    const completion = await openai.chat.completions.create({ model: 'claude-bedrock', messages: [{ role: 'user', content: 'Hi!' }] });
    expect(completion.choices[0].message.content).to.equal('Hello from the fake upstream.');
    expect(completion.usage?.prompt_tokens).to.equal(12);
    const stream = await openai.chat.completions.create({ model: 'claude-bedrock', stream: true, messages: [{ role: 'user', content: 'Hi!' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).to.equal('Hello from the fake upstream.');
    expect(cloud.bedrock.requests.map((request) => request.path)).to.deep.equal([`${BEDROCK_PATH}/invoke`, `${BEDROCK_PATH}/invoke-with-response-stream`]);
    expect(cloud.bedrock.requests[1].json()).to.not.have.property('stream');
    expect(cloud.bedrock.requests[1].json().anthropic_version).to.equal('bedrock-2023-05-31');
  });

  it('serves a Responses client translated onto Bedrock', async () => {
    const response = await openai.responses.create({ model: 'claude-bedrock', input: 'Hi!' });
    expect(response.output_text).to.equal('Hello from the fake upstream.');
    const stream = await openai.responses.create({ model: 'claude-bedrock', input: 'Hi!', stream: true });
    let text = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text).to.equal('Hello from the fake upstream.');
  });

  it('counts tokens through CountTokens, the InvokeModel body base64-encoded inside', async () => {
    const count = await anthropic.messages.countTokens({ model: 'claude-bedrock', messages: [{ role: 'user', content: 'Count me.' }] });
    expect(count.input_tokens).to.equal(42);
    const [request] = cloud.bedrock.requests;
    expect(request.path).to.equal(`${BEDROCK_PATH}/count-tokens`);
    const inner = JSON.parse(Buffer.from(request.json<{ input: { invokeModel: { body: string } } }>().input.invokeModel.body, 'base64').toString('utf8'));
    expect(inner).to.deep.include({ anthropic_version: 'bedrock-2023-05-31', messages: [{ role: 'user', content: 'Count me.' }] });
    expect(inner).to.not.have.property('model');
  });

  it('answers a ValidationException as a 400 invalid_request_error with Bedrock\'s message, in both shapes', async () => {
    cloud.bedrock.enqueue({ status: 400, exception: 'ValidationException', message: 'messages: field required' });
    const error = await anthropic.messages.create({ model: 'claude-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).to.deep.equal({ type: 'error', error: { type: 'invalid_request_error', message: 'messages: field required' } });

    cloud.bedrock.enqueue({ status: 400, exception: 'ValidationException', message: 'messages: field required' });
    const chatError = await openai.chat.completions.create({ model: 'claude-bedrock', messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
    expect(chatError).to.be.instanceOf(OpenAI.BadRequestError);
    expect((chatError as InstanceType<typeof OpenAI.BadRequestError>).message).to.include('messages: field required');
  });

  it('answers a ThrottlingException as upstream overloaded (503, not the client\'s own 429) when no other route is left', async () => {
    cloud.bedrock.enqueue({ status: 429, exception: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' });
    const error = await anthropic.messages.create({ model: 'claude-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] }).catch((e: unknown) => e);
    // docs/faults.md#c3: the provider's throttling is not the client's rate limit.
    expect(error).to.be.instanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).to.equal(503);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).to.deep.include({ type: 'error' });
    expect(((error as InstanceType<typeof Anthropic.APIError>).error as { error: { type: string } }).error.type).to.equal('overloaded_error');
  });

  it('ends a stream broken by an in-stream exception with an error event, without retrying', async () => {
    cloud.bedrock.enqueue({ reply: anthropicStream({ text: 'one two three four five six' }), afterEvents: 4, streamException: 'modelStreamErrorException', message: 'The model stream broke.' });
    const response = await fetch(`${cloud.tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': cloud.tg.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-everywhere', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Hi!' }] }),
    });
    const text = await response.text();
    expect(response.status).to.equal(200);
    expect(text).to.include('event: content_block_delta');
    expect(text).to.include('event: error');
    expect(text).to.include('The model stream broke.');
    expect(text).to.not.include('event: message_stop');
    // Committed after the first event: no second route is tried, so nothing is said twice.
    expect(cloud.bedrock.requests).to.have.length(1);
    expect(cloud.vertex.requests).to.have.length(0);
    expect(cloud.fake.requests).to.have.length(0);
  });

  it('fails over on a ThrottlingException in the stream\'s first message, before anything reached the client', async () => {
    cloud.bedrock.enqueue({ reply: anthropicStream(), afterEvents: 0, streamException: 'throttlingException', message: 'Too many tokens.' });
    const stream = anthropic.messages.stream({ model: 'claude-everywhere', max_tokens: 64, messages: [{ role: 'user', content: 'Hi!' }] });
    const message = await stream.finalMessage();
    expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello from the fake upstream.' }]);
    expect(cloud.bedrock.requests).to.have.length(1);
    expect(cloud.vertex.requests).to.have.length(1);
    cloud.vertex.requests.length = 0;
  });
});
