/**
 * The official Anthropic SDKs, unchanged, against the gateway (base URL = the bare gateway origin) in
 * front of the fake upstream: `@anthropic-ai/sdk` 1.x (Bearer, API 2026-10-21) and 0.x
 * (`anthropic-sdk-legacy`: x-api-key, API 2023-06-01), plain, streamed and a tool-use round trip.
 */
import { expect } from 'chai';
import Anthropic from '@anthropic-ai/sdk';
import AnthropicLegacy from 'anthropic-sdk-legacy';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import {
  anthropicMessage,
  anthropicStream,
  anthropicToolUse,
  countTokensReply,
} from '../helpers/upstream-replies';

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Joins the text blocks of a Messages `content` array. */
function textOf(content: ReadonlyArray<{ type: string }>): string {
  return content
    .filter((block): block is { type: 'text'; text: string } => block.type === 'text')
    .map((block) => block.text)
    .join('');
}

describe('e2e: Anthropic SDKs', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;
  let client: Anthropic;
  let legacy: AnthropicLegacy;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
    client = new Anthropic({ baseURL: tg.url, apiKey: tg.key, maxRetries: 0 });
    legacy = new AnthropicLegacy({ baseURL: tg.url, apiKey: tg.key, maxRetries: 0 });
  });

  after(async () => {
    // The fake first: it cuts any upstream exchange still open, so the gateway's stop never waits on one.
    await fake?.close();
    await tg?.stop();
  });

  afterEach(() => fake.reset());

  describe('@anthropic-ai/sdk 1.x (Bearer)', () => {
    it('returns the upstream message for a plain messages.create', async () => {
      fake.enqueue(anthropicMessage({ text: 'Plain hello.', id: 'msg_e2e_plain', inputTokens: 14, outputTokens: 4 }));
      const params = { model: 'claude-sonnet-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'Hi!' }] };

      const message = await client.messages.create(params);

      expect(message.id).to.equal('msg_e2e_plain');
      expect(textOf(message.content)).to.equal('Plain hello.');
      expect(message.stop_reason).to.equal('end_turn');
      expect(message.usage).to.include({ input_tokens: 14, output_tokens: 4 });
      const upstream = fake.requests[0];
      expect(upstream.path).to.equal('/v1/messages');
      expect(upstream.headers['x-api-key']).to.equal(PROVIDER_KEYS.anthropic);
      expect(upstream.headers.authorization).to.equal(undefined);
      expect(upstream.json()).to.deep.equal(params);
    });

    it('streams with messages.stream() and resolves finalMessage()', async () => {
      fake.enqueue(anthropicStream({ text: 'A streamed answer in several parts.', outputTokens: 9 }));

      const stream = client.messages.stream({
        model: 'claude-sonnet-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Stream please.' }],
      });
      const deltas: string[] = [];
      stream.on('text', (delta) => deltas.push(delta));
      const message = await stream.finalMessage();

      expect(textOf(message.content)).to.equal('A streamed answer in several parts.');
      expect(deltas.length).to.be.greaterThan(1);
      expect(message.stop_reason).to.equal('end_turn');
      expect(message.usage.output_tokens).to.equal(9);
      expect(fake.requests[0].json()).to.deep.include({ stream: true });
    });

    it('forwards anthropic-version and anthropic-beta unchanged', async () => {
      const beta = 'prompt-caching-2024-07-31,fast-mode-2026-02-01';

      await client.messages.create(
        { model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content: 'Versions?' }] },
        { headers: { 'anthropic-beta': beta } },
      );

      expect(fake.requests[0].headers['anthropic-version']).to.equal('2026-10-21');
      expect(fake.requests[0].headers['anthropic-beta']).to.equal(beta);
    });

    it('counts tokens with messages.countTokens', async () => {
      fake.enqueue(countTokensReply(77));

      const count = await client.messages.countTokens({
        model: 'claude-sonnet-5',
        messages: [{ role: 'user', content: 'How many tokens is this?' }],
      });

      expect(count.input_tokens).to.equal(77);
      expect(fake.requests[0].path).to.equal('/v1/messages/count_tokens');
      expect(fake.requests[0].headers['x-api-key']).to.equal(PROVIDER_KEYS.anthropic);
    });

    it('answers Messages on tollgate-echo locally, plain and streamed alike', async () => {
      const params = {
        model: 'tollgate-echo',
        max_tokens: 64,
        messages: [{ role: 'user' as const, content: 'echo this sentence back' }],
      };

      const plain = await client.messages.create(params);
      const streamed = await client.messages.stream(params).finalMessage();

      expect(plain.type).to.equal('message');
      expect(plain.model).to.equal('tollgate-echo');
      expect(textOf(plain.content)).to.contain('echo this sentence back');
      expect(plain.stop_reason).to.equal('end_turn');
      expect(plain.usage.output_tokens).to.be.greaterThan(0);
      expect(textOf(streamed.content)).to.equal(textOf(plain.content));
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('anthropic-sdk-legacy 0.x (x-api-key)', () => {
    it('returns the upstream message for a plain messages.create', async () => {
      fake.enqueue(anthropicMessage({ text: 'Legacy hello.' }));

      const message = await legacy.messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Hi from 0.x' }],
      });

      expect(textOf(message.content)).to.equal('Legacy hello.');
      expect(fake.requests[0].headers['anthropic-version']).to.equal('2023-06-01');
      expect(fake.requests[0].headers['x-api-key']).to.equal(PROVIDER_KEYS.anthropic);
    });

    it('streams with messages.stream() and resolves finalMessage()', async () => {
      fake.enqueue(anthropicStream({ text: 'Legacy streamed reply text.' }));

      const message = await legacy.messages
        .stream({ model: 'claude-sonnet-5', max_tokens: 32, messages: [{ role: 'user', content: 'Stream 0.x' }] })
        .finalMessage();

      expect(textOf(message.content)).to.equal('Legacy streamed reply text.');
      expect(message.stop_reason).to.equal('end_turn');
    });
  });

  describe('tool use round trip', () => {
    it('carries tool_use out and tool_result back on plain requests', async () => {
      fake.enqueue(
        anthropicToolUse({ name: 'get_weather', input: { city: 'Paris' }, toolUseId: 'toolu_e2e_plain', text: 'Let me check.' }),
        anthropicMessage({ text: 'It is 18 degrees and sunny in Paris.' }),
      );
      const question = { role: 'user' as const, content: 'Weather in Paris?' };

      const first = await client.messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 128,
        tools: [WEATHER_TOOL],
        messages: [question],
      });
      expect(first.stop_reason).to.equal('tool_use');
      const toolUse = first.content.find((block) => block.type === 'tool_use');
      expect(toolUse).to.deep.include({ type: 'tool_use', id: 'toolu_e2e_plain', name: 'get_weather', input: { city: 'Paris' } });

      const toolResult = { type: 'tool_result' as const, tool_use_id: 'toolu_e2e_plain', content: '18 degrees, sunny' };
      const second = await client.messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 128,
        tools: [WEATHER_TOOL],
        messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [toolResult] }],
      });

      expect(textOf(second.content)).to.equal('It is 18 degrees and sunny in Paris.');
      expect(fake.requests).to.have.length(2);
      const sent = fake.requests[1].json() as { messages: Array<{ role: string; content: unknown }> };
      expect(sent.messages).to.have.length(3);
      expect(sent.messages[1].content).to.deep.equal(JSON.parse(JSON.stringify(first.content)));
      expect(sent.messages[2]).to.deep.equal({ role: 'user', content: [toolResult] });
    });

    it('carries tool_use out and tool_result back on streamed requests', async () => {
      fake.enqueue(
        anthropicToolUse({ name: 'get_weather', input: { city: 'Lyon', unit: 'celsius' }, toolUseId: 'toolu_e2e_stream', stream: true }),
        anthropicStream({ text: 'Lyon is at 21 degrees.' }),
      );
      const question = { role: 'user' as const, content: 'Weather in Lyon?' };

      const first = await client.messages
        .stream({ model: 'claude-sonnet-5', max_tokens: 128, tools: [WEATHER_TOOL], messages: [question] })
        .finalMessage();
      expect(first.stop_reason).to.equal('tool_use');
      const toolUse = first.content.find((block) => block.type === 'tool_use');
      expect(toolUse).to.deep.include({ id: 'toolu_e2e_stream', name: 'get_weather', input: { city: 'Lyon', unit: 'celsius' } });

      const toolResult = { type: 'tool_result' as const, tool_use_id: 'toolu_e2e_stream', content: '21 degrees' };
      const second = await client.messages
        .stream({
          model: 'claude-sonnet-5',
          max_tokens: 128,
          tools: [WEATHER_TOOL],
          messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [toolResult] }],
        })
        .finalMessage();

      expect(textOf(second.content)).to.equal('Lyon is at 21 degrees.');
      const sent = fake.requests[1].json() as { stream: boolean; messages: Array<{ role: string; content: unknown }> };
      expect(sent.stream).to.equal(true);
      expect(sent.messages[2]).to.deep.equal({ role: 'user', content: [toolResult] });
    });
  });

  describe('raw requests', () => {
    it('forwards a request without anthropic-version with the header still absent', async () => {
      const response = await fetch(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tg.key },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 8, messages: [{ role: 'user', content: 'no version' }] }),
      });

      expect(response.status).to.equal(200);
      await response.arrayBuffer();
      expect(fake.requests).to.have.length(1);
      expect(fake.requests[0].headers).to.not.have.property('anthropic-version');
    });
  });
});
