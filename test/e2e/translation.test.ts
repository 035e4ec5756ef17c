/**
 * Translation end to end, with the official SDKs as clients and the fake upstream as the provider:
 * chat and Responses clients on a claude model (Messages upstream), and a Messages client on an
 * OpenAI-family model (Chat Completions upstream).
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicError, anthropicMessage, anthropicStream, anthropicToolUse, openaiError } from '../helpers/upstream-replies';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

/** A chat chunk stream as an OpenAI upstream sends it, from deltas. */
function chatChunks(deltas: Array<Record<string, unknown>>, finish: string, usage: Record<string, unknown>): SseEvent[] {
  const base = { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1, model: 'gpt-test' };
  const events: SseEvent[] = deltas.map((delta) => ({ data: { ...base, choices: [{ index: 0, delta, finish_reason: null }] } }));
  events.push({ data: { ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] } });
  events.push({ data: { ...base, choices: [], usage } });
  events.push({ data: '[DONE]' });
  return events;
}

describe('e2e: translation', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
    openai = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: tg.key, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: tg.url, apiKey: tg.key, maxRetries: 0 });
  });

  after(async () => {
    await fake?.close();
    await tg?.stop();
  });

  afterEach(() => fake.reset());

  describe('chat client on a claude model', () => {
    it('streams a two-turn tool-call round trip with the openai SDK', async () => {
      fake.enqueue(
        anthropicToolUse({ stream: true, text: 'Checking.', toolUseId: 'toolu_W1', name: 'get_weather', input: { city: 'Paris' }, inputTokens: 40, outputTokens: 20 }),
      );
      const first = await openai.chat.completions.create({
        model: 'claude-sonnet-5',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [WEATHER_TOOL],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let args = '';
      let call: { id?: string; name?: string } = {};
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of first) {
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (choice === undefined) continue;
        text += choice.delta.content ?? '';
        for (const fragment of choice.delta.tool_calls ?? []) {
          expect(fragment.index).to.equal(0);
          if (fragment.id !== undefined) call = { id: fragment.id, name: fragment.function?.name };
          args += fragment.function?.arguments ?? '';
        }
        finish = choice.finish_reason ?? finish;
      }
      expect(text).to.equal('Checking.');
      expect(call).to.deep.equal({ id: 'toolu_W1', name: 'get_weather' });
      expect(JSON.parse(args)).to.deep.equal({ city: 'Paris' });
      expect(finish).to.equal('tool_calls');
      expect(usage).to.include({ prompt_tokens: 40, completion_tokens: 20, total_tokens: 60 });

      const upstreamFirst = fake.requests[0];
      expect(upstreamFirst.path).to.equal('/v1/messages');
      expect(upstreamFirst.headers['x-api-key']).to.equal(PROVIDER_KEYS.anthropic);
      expect(upstreamFirst.headers['anthropic-version']).to.equal('2023-06-01');
      expect(upstreamFirst.headers.authorization).to.equal(undefined);
      expect(upstreamFirst.json()).to.deep.include({ model: 'claude-sonnet-5', max_tokens: 4096, stream: true });

      fake.enqueue(anthropicStream({ text: 'It is sunny in Paris.', inputTokens: 70, outputTokens: 7 }));
      const second = openai.chat.completions.stream({
        model: 'claude-sonnet-5',
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'toolu_W1', type: 'function', function: { name: 'get_weather', arguments: args } }] },
          { role: 'tool', tool_call_id: 'toolu_W1', content: '{"sky":"clear"}' },
        ],
        tools: [WEATHER_TOOL],
        stream_options: { include_usage: true },
      });
      const final = await second.finalChatCompletion();
      expect(final.choices[0].message.content).to.equal('It is sunny in Paris.');
      expect(final.choices[0].finish_reason).to.equal('stop');
      expect(final.usage).to.include({ prompt_tokens: 70, completion_tokens: 7 });
      expect(fake.requests[1].json()).to.deep.include({
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'toolu_W1', name: 'get_weather', input: { city: 'Paris' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_W1', content: '{"sky":"clear"}' }] },
        ],
      });
    });

    it('answers a plain request with a chat.completion carrying the model the client asked for', async () => {
      fake.enqueue(anthropicMessage({ text: 'Hello there.', inputTokens: 9, outputTokens: 3 }));
      const completion = await openai.chat.completions.create({ model: 'claude-renamed', messages: [{ role: 'user', content: 'Hi' }] });
      expect(completion.object).to.equal('chat.completion');
      expect(completion.id).to.match(/^chatcmpl-/);
      expect(completion.model).to.equal('claude-renamed');
      expect(completion.choices[0].message).to.include({ role: 'assistant', content: 'Hello there.' });
      expect(completion.usage).to.include({ prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 });
      expect(fake.requests[0].json()).to.deep.include({ model: 'claude-upstream-id' });
    });

    it('turns an upstream 529 overloaded error into a 503 the openai SDK raises as InternalServerError', async () => {
      fake.enqueue(anthropicError(529, 'overloaded_error', 'Overloaded'));
      const error = await openai.chat.completions.create({ model: 'claude-sonnet-5', messages: [{ role: 'user', content: 'Hi' }] }).catch((err: unknown) => err);
      expect(error).to.be.instanceOf(OpenAI.InternalServerError);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).to.equal(503);
      expect(apiError.code).to.equal('server_is_overloaded');
      expect(apiError.message).to.include('Overloaded');
    });

    it('refuses n > 1 with a 400 naming the field, without calling the upstream', async () => {
      const error = await openai.chat.completions
        .create({ model: 'claude-sonnet-5', n: 2, messages: [{ role: 'user', content: 'Hi' }] })
        .catch((err: unknown) => err);
      expect(error).to.be.instanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.APIError>).param).to.equal('n');
      expect(fake.requests).to.have.length(0);
    });

    it('ends a stream the upstream breaks off with an error the SDK throws, not a finished answer', async () => {
      const reply = anthropicStream({ text: 'This answer will be cut short by the upstream.' });
      fake.enqueue({ ...reply, events: reply.events.slice(0, 4), thenReset: true });
      const stream = await openai.chat.completions.create({ model: 'claude-sonnet-5', messages: [{ role: 'user', content: 'Hi' }], stream: true });
      let finish: string | null = null;
      const error = await (async () => {
        for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      })().catch((err: unknown) => err);
      expect(error).to.be.instanceOf(Error);
      expect(String(error)).to.include('broke off');
      expect(finish).to.equal(null);
    });
  });

  describe('messages client on an OpenAI-family model', () => {
    it('messages.stream() returns a finalMessage with text and tool use, from a chat upstream', async () => {
      fake.enqueue({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        events: chatChunks(
          [
            { role: 'assistant', content: '' },
            { content: 'Let me ' },
            { content: 'look.' },
            { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
            { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
            { tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] },
          ],
          'tool_calls',
          { prompt_tokens: 50, completion_tokens: 12, total_tokens: 62, prompt_tokens_details: { cached_tokens: 20 } },
        ),
      });
      const stream = anthropic.messages.stream({
        model: 'gpt-test',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Weather in Rome?' }],
        tools: [{ name: 'get_weather', description: 'Weather by city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      });
      const message = await stream.finalMessage();
      expect(message.stop_reason).to.equal('tool_use');
      expect(message.content).to.have.length(2);
      expect(message.content[0]).to.deep.include({ type: 'text', text: 'Let me look.' });
      expect(message.content[1]).to.deep.include({ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Rome' } });
      expect(message.usage).to.deep.include({ input_tokens: 30, cache_read_input_tokens: 20, output_tokens: 12 });

      const upstream = fake.requests[0];
      expect(upstream.path).to.equal('/v1/chat/completions');
      expect(upstream.headers.authorization).to.equal(`Bearer ${PROVIDER_KEYS.openai}`);
      expect(upstream.json()).to.deep.include({
        model: 'gpt-test',
        max_completion_tokens: 256,
        stream: true,
        stream_options: { include_usage: true },
      });
    });

    it('rewrites an OpenAI context-length error in the wording Claude Code compacts on', async () => {
      fake.enqueue(
        openaiError(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130500 tokens.", {
          code: 'context_length_exceeded',
        }),
      );
      const error = await anthropic.messages
        .create({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] })
        .catch((err: unknown) => err);
      expect(error).to.be.instanceOf(Anthropic.BadRequestError);
      expect(String((error as Error).message)).to.include('prompt is too long: 130500 tokens > 128000 maximum');
    });

    it('counts tokens for an OpenAI-family model locally, without calling the upstream', async () => {
      const { data, response } = await anthropic.messages
        .countTokens({ model: 'gpt-test', system: 'Be brief.', messages: [{ role: 'user', content: 'Count the tokens of this sentence, please.' }] })
        .withResponse();
      // o200k_base: "Be brief." is 4 tokens and the sentence 9.
      expect(data.input_tokens).to.be.within(12, 15);
      expect(response.headers.get('x-tollgate-token-count')).to.equal('estimated (o200k_base)');
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('responses client on a claude model', () => {
    it('responses.create returns a completed response with output_text and usage', async () => {
      fake.enqueue(anthropicMessage({ text: 'Bonjour.', inputTokens: 8, outputTokens: 2 }));
      const response = await openai.responses.create({ model: 'claude-sonnet-5', input: 'Say hello in French.', instructions: 'Be brief.' });
      expect(response.status).to.equal('completed');
      expect(response.output_text).to.equal('Bonjour.');
      expect(response.model).to.equal('claude-sonnet-5');
      expect(response.usage).to.include({ input_tokens: 8, output_tokens: 2, total_tokens: 10 });
      expect(fake.requests[0].json()).to.deep.include({
        system: [{ type: 'text', text: 'Be brief.' }],
        messages: [{ role: 'user', content: 'Say hello in French.' }],
      });
    });

    it('streams the Responses event sequence with increasing sequence numbers', async () => {
      fake.enqueue(anthropicToolUse({ stream: true, text: 'Looking.', toolUseId: 'toolu_R', name: 'get_weather', input: { city: 'Oslo' } }));
      const stream = await openai.responses.create({
        model: 'claude-sonnet-5',
        input: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }],
        stream: true,
      });
      const types: string[] = [];
      const sequence: number[] = [];
      let completed: OpenAI.Responses.Response | null = null;
      for await (const event of stream) {
        types.push(event.type);
        sequence.push(event.sequence_number);
        if (event.type === 'response.completed') completed = event.response;
      }
      expect(types[0]).to.equal('response.created');
      expect(types.at(-1)).to.equal('response.completed');
      expect(types).to.include('response.function_call_arguments.done');
      expect(sequence).to.deep.equal(sequence.map((_, i) => i));
      const output = completed!.output;
      expect(output.map((item) => item.type)).to.deep.equal(['message', 'function_call']);
      expect(output[1]).to.deep.include({ call_id: 'toolu_R', name: 'get_weather', arguments: '{"city":"Oslo"}' });
    });
  });
});
