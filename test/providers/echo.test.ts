import { UNSET_PROTOCOL_SETTINGS } from '../../src/config/derive';
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { Readable } from 'node:stream';
import type { ProviderConfig } from '../../src/config/types';
import { SseParser } from '../../src/protocols/sse';
import { ENDPOINTS, type EndpointId } from '../../src/protocols/types';
import { EchoClient } from '../../src/providers/echo';
import { countEchoTokens, cutToTokens, echoTokens, tokenPieces } from '../../src/providers/echo/tokenizer';
import type { UpstreamResponse } from '../../src/upstream/types';
import { openAISchemas } from '../helpers/openai-schemas';

const PROVIDER: ProviderConfig = {
  id: 'echo',
  protocol: 'echo',
  base_url: 'echo://local',
  api_key: '',
  ...UNSET_PROTOCOL_SETTINGS,
  headers: {},
  anthropic_version: '2023-06-01',
  timeouts: { connect_ms: 1000, first_byte_ms: 1000, idle_ms: 1000 },
  max_connections: 1,
};
const echo = new EchoClient(PROVIDER);

const QUESTION = 'Hello, world! How are you?'; // 8 tokens
const REPLY = `Echo: ${QUESTION}`; // 10 tokens
const PIECES = ['Echo', ': ', 'Hello', ', ', 'world', '! ', 'How ', 'are ', 'you', '?'];

function send(endpoint: EndpointId, body: unknown, signal = new AbortController().signal): Promise<UpstreamResponse> {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return echo.send({ endpoint, path: ENDPOINTS[endpoint].path, headers: {}, body: bytes, signal });
}

async function text(response: UpstreamResponse): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function json(endpoint: EndpointId, body: unknown): Promise<Record<string, unknown>> {
  const response = await send(endpoint, body);
  expect(response.status).to.equal(200);
  expect(response.headers['content-type']).to.equal('application/json');
  return JSON.parse(await text(response)) as Record<string, unknown>;
}

async function events(endpoint: EndpointId, body: unknown): Promise<Array<{ event: string | null; data: string }>> {
  const response = await send(endpoint, body);
  expect(response.headers['content-type']).to.equal('text/event-stream; charset=utf-8');
  return new SseParser().push(Buffer.from(await text(response)));
}

const payloads = (list: Array<{ data: string }>) => list.map((event) => JSON.parse(event.data) as Record<string, unknown> & { type: string });

const CHAT = { model: 'echo-1', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: QUESTION }] };
const RESPONSES = { model: 'echo-1', instructions: 'You are terse.', input: QUESTION };
const MESSAGES = { model: 'echo-1', max_tokens: 100, system: 'You are terse.', messages: [{ role: 'user', content: [{ type: 'text', text: QUESTION }] }] };

describe('echo provider', function () {
  before(function () {
    this.timeout(60_000);
    openAISchemas();
  });

  describe('tokenizer', () => {
    it('counts words and single symbols, and splits into one piece per token', () => {
      expect(echoTokens('Héllo, wörld_2 ! 42x')).to.deep.equal(['Héllo', ',', 'wörld_2', '!', '42x']);
      expect(countEchoTokens('  ')).to.equal(0);
      expect(tokenPieces(REPLY)).to.deep.equal(PIECES);
      expect(tokenPieces('  a  b ').join('')).to.equal('  a  b ');
      expect(cutToTokens(REPLY, 3)).to.equal('Echo: Hello');
      expect(cutToTokens(REPLY, 0)).to.equal('');
      expect(cutToTokens(REPLY, 99)).to.equal(REPLY);
    });
  });

  describe('chat', () => {
    it('answers a plain request with the echo and honest usage', async () => {
      const completion = await json('chat', CHAT);
      openAISchemas().assertValid('CreateChatCompletionResponse', completion);
      expect(completion).to.have.nested.property('choices[0].message.content', REPLY);
      expect(completion).to.have.nested.property('choices[0].finish_reason', 'stop');
      expect(completion).to.include({ model: 'echo-1', object: 'chat.completion' });
      expect(completion.usage).to.deep.include({ prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 });
    });

    it('streams one token per delta, with the usage chunk when include_usage is true', async () => {
      const list = await events('chat', { ...CHAT, stream: true, stream_options: { include_usage: true } });
      expect(list.pop()?.data).to.equal('[DONE]');
      const chunks = payloads(list);
      for (const chunk of chunks) openAISchemas().assertValid('CreateChatCompletionStreamResponse', chunk);
      const deltas = chunks.slice(1, -2).map((chunk) => (chunk.choices as Array<{ delta: { content: string } }>)[0].delta.content);
      expect(deltas).to.deep.equal(PIECES);
      expect(chunks[chunks.length - 2]).to.have.nested.property('choices[0].finish_reason', 'stop');
      expect(chunks[chunks.length - 1]).to.deep.include({ choices: [] });
      expect(chunks[chunks.length - 1]).to.have.nested.property('usage.prompt_tokens', 12);
      expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).to.equal(true);
    });

    it('leaves the usage chunk out when include_usage is off, and cuts at max_completion_tokens', async () => {
      const list = await events('chat', { ...CHAT, stream: true, max_completion_tokens: 3 });
      expect(list.some((event) => event.data.includes('usage'))).to.equal(false);
      const chunks = payloads(list.slice(0, -1));
      expect(chunks.slice(1, -1).map((chunk) => (chunk.choices as Array<{ delta: { content: string } }>)[0].delta.content)).to.deep.equal(['Echo', ': ', 'Hello']);
      expect(chunks[chunks.length - 1]).to.have.nested.property('choices[0].finish_reason', 'length');
      const plain = await json('chat', { ...CHAT, max_tokens: 3 });
      expect(plain).to.have.nested.property('choices[0].message.content', 'Echo: Hello');
      expect(plain).to.have.nested.property('usage.completion_tokens', 3);
      expect(plain).to.have.nested.property('choices[0].finish_reason', 'length');
    });

    it('echoes only the first 50 tokens of the last user message, its text parts joined', async () => {
      const long = Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ');
      const body = { model: 'echo-1', messages: [{ role: 'user', content: 'first' }, { role: 'user', content: [{ type: 'text', text: long }, { type: 'text', text: 'tail' }] }] };
      const completion = await json('chat', body);
      expect(completion).to.have.nested.property('choices[0].message.content', `Echo: ${cutToTokens(long, 50)}`);
      expect(completion).to.have.nested.property('usage.completion_tokens', 52);
      expect(completion).to.have.nested.property('usage.prompt_tokens', 82);
    });
  });

  describe('responses', () => {
    it('answers a plain request, instructions and string input counted', async () => {
      const response = await json('responses', RESPONSES);
      openAISchemas().assertValid('Response', response);
      expect(response).to.include({ status: 'completed', instructions: 'You are terse.', model: 'echo-1' });
      expect(response).to.have.nested.property('output[0].content[0].text', REPLY);
      expect(response.usage).to.deep.include({ input_tokens: 12, output_tokens: 10, total_tokens: 22 });
    });

    it('streams valid events ending in response.incomplete when max_output_tokens cuts the reply', async () => {
      const items = [{ role: 'user', content: 'older' }, { type: 'message', role: 'user', content: [{ type: 'input_text', text: QUESTION }] }];
      const list = payloads(await events('responses', { model: 'echo-1', input: items, stream: true, max_output_tokens: 4 }));
      for (const event of list) openAISchemas().assertValid(openAISchemas().responsesEventSchema(event.type) ?? 'missing', event);
      expect(list.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).to.deep.equal(['Echo', ': ', 'Hello', ',']);
      const last = list[list.length - 1];
      expect(last.type).to.equal('response.incomplete');
      expect(last).to.have.nested.property('response.incomplete_details.reason', 'max_output_tokens');
      expect(last).to.have.nested.property('response.usage.input_tokens', 9);
      expect(last).to.have.nested.property('response.usage.output_tokens', 4);
    });
  });

  describe('messages', () => {
    it('answers a plain request with end_turn and Anthropic usage', async () => {
      const message = await json('messages', MESSAGES);
      expect(message).to.deep.include({ type: 'message', role: 'assistant', stop_reason: 'end_turn', stop_sequence: null });
      expect(message.content).to.deep.equal([{ type: 'text', text: REPLY }]);
      expect(message.usage).to.deep.equal({ input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 10 });
    });

    it('streams message_start … message_stop and stops at max_tokens', async () => {
      const list = await events('messages', { ...MESSAGES, stream: true, max_tokens: 2 });
      const types = payloads(list).map((event, i) => (expect(list[i].event).to.equal(event.type), event.type));
      expect(types).to.deep.equal([
        'message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
      ]);
      const delta = payloads(list)[5];
      expect(delta).to.deep.include({ delta: { stop_reason: 'max_tokens', stop_sequence: null } });
      expect(delta).to.have.nested.property('usage.output_tokens', 2);
      expect(payloads(list)[0]).to.have.nested.property('message.usage.input_tokens', 12);
    });

    it('counts tokens for count_tokens, never less than 1', async () => {
      expect(await json('count_tokens', { model: 'echo-1', system: [{ type: 'text', text: 'Be kind.' }], messages: MESSAGES.messages })).to.deep.equal({ input_tokens: 11 });
      expect(await json('count_tokens', { model: 'echo-1', messages: [{ role: 'user', content: ' ' }] })).to.deep.equal({ input_tokens: 1 });
    });
  });

  describe('guards and abort', () => {
    it('answers invalid JSON with a 400 in the endpoint error shape', async () => {
      const openai = await send('chat', '{nope');
      expect(openai.status).to.equal(400);
      expect(JSON.parse(await text(openai))).to.have.nested.property('error.type', 'invalid_request_error');
      const anthropic = await send('messages', '[1]');
      expect(anthropic.status).to.equal(400);
      expect(JSON.parse(await text(anthropic))).to.deep.include({ type: 'error' });
    });

    it('destroys the stream when the attempt is aborted, and refuses an aborted attempt', async () => {
      const controller = new AbortController();
      const response = await send('chat', { ...CHAT, stream: true }, controller.signal);
      const reading = text(response);
      controller.abort();
      let failure: unknown = null;
      await reading.catch((err: unknown) => (failure = err));
      expect(failure).to.have.property('name', 'AbortError');
      expect(response.body.destroyed).to.equal(true);
      let refused: unknown = null;
      await send('messages', MESSAGES, controller.signal).catch((err: unknown) => (refused = err));
      expect(refused).to.have.property('name', 'AbortError');
    });
  });

  describe('through the official SDKs', () => {
    /** A fetch that hands each SDK request to the echo client, as the gateway would. */
    const echoFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const path = new URL(input instanceof Request ? input.url : input).pathname;
      const endpoint = (Object.values(ENDPOINTS).find((candidate) => candidate.path === path) ?? ENDPOINTS.chat).id;
      const upstream = await send(endpoint, init?.body as string);
      const headers = new Headers({ 'content-type': String(upstream.headers['content-type']) });
      return new Response(Readable.toWeb(upstream.body) as ReadableStream<Uint8Array>, { status: upstream.status, headers });
    };
    const openai = new OpenAI({ apiKey: 'k', baseURL: 'http://echo.test/v1', fetch: echoFetch, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: 'k', baseURL: 'http://echo.test', fetch: echoFetch, maxRetries: 0 });

    it('accumulates the chat stream with openai-node', async () => {
      const completion = await openai.chat.completions.stream({ model: 'echo-1', messages: [{ role: 'user', content: QUESTION }] }).finalChatCompletion();
      expect(completion.choices[0].message.content).to.equal(REPLY);
    });

    it('accumulates the Responses stream with openai-node', async () => {
      const response = await openai.responses.stream({ model: 'echo-1', input: QUESTION }).finalResponse();
      expect(response.output_text).to.equal(REPLY);
      expect(response.usage?.output_tokens).to.equal(10);
    });

    it('accumulates the Messages stream and counts tokens with the Anthropic SDK', async () => {
      const message = await anthropic.messages.stream({ model: 'echo-1', max_tokens: 100, messages: [{ role: 'user', content: QUESTION }] }).finalMessage();
      expect(message.content).to.deep.equal([{ type: 'text', text: REPLY }]);
      expect(message.usage.output_tokens).to.equal(10);
      const counted = await anthropic.messages.countTokens({ model: 'echo-1', messages: [{ role: 'user', content: QUESTION }] });
      expect(counted.input_tokens).to.equal(8);
    });
  });
});
