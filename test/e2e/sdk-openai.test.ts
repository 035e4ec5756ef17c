/**
 * The official `openai` SDK, unchanged, against the gateway (base URL `<gateway>/v1`) in front of the
 * fake upstream: chat and responses, plain and streamed, and the SDK's typed errors.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion, chatStream, responsesObject, responsesStream } from '../helpers/upstream-replies';

describe('e2e: openai SDK', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;
  let client: OpenAI;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
    client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: tg.key, maxRetries: 0 });
  });

  after(async () => {
    // The fake first: it cuts any upstream exchange still open, so the gateway's stop never waits on one.
    await fake?.close();
    await tg?.stop();
  });

  afterEach(() => fake.reset());

  describe('chat.completions', () => {
    it('returns the upstream completion for a plain request on gpt-test', async () => {
      fake.enqueue(chatCompletion({ text: 'Plain answer.', id: 'chatcmpl-plain1', inputTokens: 11, outputTokens: 3 }));
      const params = { model: 'gpt-test', messages: [{ role: 'user' as const, content: 'Say something.' }] };

      const completion = await client.chat.completions.create(params);

      expect(completion.id).to.equal('chatcmpl-plain1');
      expect(completion.choices[0].message.content).to.equal('Plain answer.');
      expect(completion.choices[0].finish_reason).to.equal('stop');
      expect(completion.usage).to.include({ prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
      expect(fake.requests).to.have.length(1);
      expect(fake.requests[0].path).to.equal('/v1/chat/completions');
      expect(fake.requests[0].headers.authorization).to.equal(`Bearer ${PROVIDER_KEYS.openai}`);
      expect(fake.requests[0].json()).to.deep.equal(params);
    });

    it('streams the chunks of a streamed request on gpt-test', async () => {
      fake.enqueue(chatStream({ text: 'One two three four five six.' }));

      const stream = await client.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'Count.' }],
        stream: true,
      });
      let text = '';
      let chunks = 0;
      let finish: string | null = null;
      for await (const chunk of stream) {
        chunks += 1;
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }

      expect(text).to.equal('One two three four five six.');
      expect(chunks).to.be.greaterThan(2);
      expect(finish).to.equal('stop');
      expect(fake.requests[0].json()).to.deep.include({ stream: true });
    });

    it('relays the usage chunk when stream_options.include_usage is set', async () => {
      fake.enqueue(chatStream({ text: 'With usage.', includeUsage: true, inputTokens: 21, outputTokens: 4 }));

      const stream = await client.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'Usage please.' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const usages: OpenAI.CompletionUsage[] = [];
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usages.push(chunk.usage);
      }

      expect(text).to.equal('With usage.');
      expect(usages).to.have.length(1);
      expect(usages[0]).to.include({ prompt_tokens: 21, completion_tokens: 4, total_tokens: 25 });
      expect(fake.requests[0].json()).to.deep.include({ stream_options: { include_usage: true } });
    });

    it('asks the upstream for usage on a streamed request that has none, and hides it from the client (decision D3)', async () => {
      const stream = await client.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'No usage.' }],
        stream: true,
      });
      const chunks: unknown[] = [];
      for await (const chunk of stream) chunks.push(chunk);

      expect(fake.requests[0].json()).to.deep.include({ stream_options: { include_usage: true } });
      expect(chunks.length).to.be.greaterThan(0);
      for (const chunk of chunks) {
        expect(chunk, 'no usage field, not even null').to.not.have.property('usage');
        expect((chunk as { choices: unknown[] }).choices).to.have.length.greaterThan(0);
      }
    });

    it('answers plain chat on tollgate-echo locally, without calling the upstream', async () => {
      const completion = await client.chat.completions.create({
        model: 'tollgate-echo',
        messages: [{ role: 'user', content: 'ping from the e2e suite' }],
      });

      expect(completion.object).to.equal('chat.completion');
      expect(completion.model).to.equal('tollgate-echo');
      expect(completion.choices[0].message.role).to.equal('assistant');
      expect(completion.choices[0].message.content).to.contain('ping from the e2e suite');
      expect(completion.choices[0].finish_reason).to.equal('stop');
      expect(completion.usage?.completion_tokens).to.be.greaterThan(0);
      expect(fake.requests).to.have.length(0);
    });

    it('streams chat on tollgate-echo with the same text as the plain answer', async () => {
      const messages = [{ role: 'user' as const, content: 'deterministic echo please' }];
      const plain = await client.chat.completions.create({ model: 'tollgate-echo', messages });

      const stream = await client.chat.completions.create({ model: 'tollgate-echo', messages, stream: true });
      let text = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }

      expect(text).to.equal(plain.choices[0].message.content);
      expect(finish).to.equal('stop');
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('responses', () => {
    it('returns the upstream response object for responses.create on gpt-test', async () => {
      fake.enqueue(responsesObject({ text: 'Responses answer.', id: 'resp_plain1', inputTokens: 9, outputTokens: 3 }));

      const response = await client.responses.create({ model: 'gpt-test', input: 'Hello?' });

      expect(response.id).to.equal('resp_plain1');
      expect(response.status).to.equal('completed');
      expect(response.output_text).to.equal('Responses answer.');
      expect(response.usage).to.include({ input_tokens: 9, output_tokens: 3, total_tokens: 12 });
      expect(fake.requests[0].path).to.equal('/v1/responses');
      expect(fake.requests[0].json()).to.deep.equal({ model: 'gpt-test', input: 'Hello?' });
    });

    it('streams the events of a streamed responses.create on gpt-test', async () => {
      fake.enqueue(responsesStream({ text: 'Streamed responses answer here.' }));

      const stream = await client.responses.create({ model: 'gpt-test', input: 'Stream it.', stream: true });
      const types: string[] = [];
      let text = '';
      let completed: OpenAI.Responses.Response | undefined;
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }

      expect(types[0]).to.equal('response.created');
      expect(types[types.length - 1]).to.equal('response.completed');
      expect(text).to.equal('Streamed responses answer here.');
      expect(completed?.status).to.equal('completed');
      expect(completed?.usage?.output_tokens).to.be.greaterThan(0);
    });
  });

  describe('errors', () => {
    it('throws AuthenticationError 401 invalid_api_key for a wrong key', async () => {
      const stranger = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: `sk-${'x'.repeat(48)}`, maxRetries: 0 });

      const err = await stranger.chat.completions
        .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
        .then(() => null, (e: unknown) => e);

      expect(err).to.be.instanceOf(OpenAI.AuthenticationError);
      const apiError = err as InstanceType<typeof OpenAI.AuthenticationError>;
      expect(apiError.status).to.equal(401);
      expect(apiError.code).to.equal('invalid_api_key');
      expect(apiError.requestID).to.be.a('string').and.not.equal('');
      expect(fake.requests).to.have.length(0);
    });

    it('throws NotFoundError 404 model_not_found for an unknown model', async () => {
      const err = await client.chat.completions
        .create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] })
        .then(() => null, (e: unknown) => e);

      expect(err).to.be.instanceOf(OpenAI.NotFoundError);
      const apiError = err as InstanceType<typeof OpenAI.NotFoundError>;
      expect(apiError.status).to.equal(404);
      expect(apiError.code).to.equal('model_not_found');
      expect(apiError.message).to.contain('no-such-model');
      expect(fake.requests).to.have.length(0);
    });

    it('throws BadRequestError 400 for an empty messages array', async () => {
      const err = await client.chat.completions
        .create({ model: 'gpt-test', messages: [] })
        .then(() => null, (e: unknown) => e);

      expect(err).to.be.instanceOf(OpenAI.BadRequestError);
      const apiError = err as InstanceType<typeof OpenAI.BadRequestError>;
      expect(apiError.status).to.equal(400);
      expect(apiError.type).to.equal('invalid_request_error');
      expect(apiError.message).to.contain('at least one message is required');
      expect(fake.requests).to.have.length(0);
    });

    it('throws AuthenticationError on responses.create with a wrong key', async () => {
      const stranger = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });

      const err = await stranger.responses.create({ model: 'gpt-test', input: 'hi' }).then(() => null, (e: unknown) => e);

      expect(err).to.be.instanceOf(OpenAI.AuthenticationError);
      expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).to.equal('invalid_api_key');
      expect(fake.requests).to.have.length(0);
    });
  });
});
