import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { buildMessage, MessagesStreamWriter, messagesStopReason } from '../../src/protocols/anthropic-messages/writer';
import { messagesUsage } from '../../src/protocols/anthropic-messages/usage';
import { chatUsage } from '../../src/protocols/openai-chat/usage';
import { buildChatCompletion, chatFinishReason, ChatStreamWriter } from '../../src/protocols/openai-chat/writer';
import { responsesUsage } from '../../src/protocols/openai-responses/usage';
import { buildResponse, responsesRequestEcho, ResponsesStreamWriter } from '../../src/protocols/openai-responses/writer';
import { SseParser, type SseEvent } from '../../src/protocols/sse';
import type { AssistantTurn, TurnStop } from '../../src/protocols/turn';
import type { Usage } from '../../src/protocols/types';
import { openAISchemas } from '../helpers/openai-schemas';

/** Cache reads and writes both present, so every mapping has something to get wrong. */
const USAGE: Usage = { inputTokens: 10, cacheWriteTokens: 200, cacheWrite1hTokens: 0, cacheReadTokens: 3000, outputTokens: 42, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' };
const COUNTS = { inputTokens: 10, cacheWriteTokens: 200, cacheWrite1hTokens: 0, cacheReadTokens: 3000, outputTokens: 42, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {} };

function parse(text: string): SseEvent[] {
  const parser = new SseParser();
  const events = parser.push(Buffer.from(text));
  expect(parser.hasPartialEvent(), 'stream ends mid-event').to.equal(false);
  return events;
}

type Payload = Record<string, unknown> & { type: string };

/** The JSON payloads of a stream whose frames must all carry `event:` equal to `type`. */
function typedPayloads(text: string): Payload[] {
  return parse(text).map((event) => {
    const payload = JSON.parse(event.data) as Payload;
    expect(event.event, 'event line').to.equal(payload.type);
    return payload;
  });
}

const TEXT_TURN: AssistantTurn = { id: 'x1', model: 'm-1', created: 1700000000, parts: [{ type: 'text', text: 'Hello there' }], stop: 'end', usage: USAGE };

const TOOL_TURN: AssistantTurn = {
  model: 'm-1',
  parts: [
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_call', id: 'call_a', name: 'now', arguments: '' },
    { type: 'tool_call', id: 'call_b', name: 'weather', arguments: '{"city":"Paris"}' },
  ],
  stop: 'tool_use',
  usage: USAGE,
};

describe('protocol writers', function () {
  before(function () {
    this.timeout(60_000); // the OpenAPI yaml is ~3 MB
    openAISchemas();
  });

  describe('chat completions', () => {
    it('builds the chat.completion object with OpenAI usage semantics', () => {
      const completion = buildChatCompletion(TEXT_TURN);
      expect(completion).to.deep.equal({
        id: 'x1',
        object: 'chat.completion',
        created: 1700000000,
        model: 'm-1',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Hello there', refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' },
        ],
        usage: {
          prompt_tokens: 3210,
          completion_tokens: 42,
          total_tokens: 3252,
          prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 200 },
          completion_tokens_details: { reasoning_tokens: 0 },
        },
      });
      openAISchemas().assertValid('CreateChatCompletionResponse', completion);
      expect(chatUsage(completion.usage as unknown as Record<string, unknown>)).to.deep.equal(COUNTS);
    });

    it('mints chatcmpl ids and puts tool calls beside null content, empty arguments as {}', () => {
      const completion = buildChatCompletion(TOOL_TURN);
      expect(completion.id).to.match(/^chatcmpl-\w+$/);
      expect(completion.choices[0].message.content).to.equal('Let me look.');
      expect(completion.choices[0].message.tool_calls).to.deep.equal([
        { id: 'call_a', type: 'function', function: { name: 'now', arguments: '{}' } },
        { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
      ]);
      expect(completion.choices[0].finish_reason).to.equal('tool_calls');
      const toolsOnly = buildChatCompletion({ ...TOOL_TURN, parts: TOOL_TURN.parts.slice(1) });
      expect(toolsOnly.choices[0].message.content).to.equal(null);
      openAISchemas().assertValid('CreateChatCompletionResponse', completion);
      openAISchemas().assertValid('CreateChatCompletionResponse', toolsOnly);
    });

    it('maps every neutral stop to a finish_reason', () => {
      const stops: TurnStop[] = ['end', 'stop_sequence', 'max_tokens', 'tool_use', 'refusal'];
      expect(stops.map(chatFinishReason)).to.deep.equal(['stop', 'stop', 'length', 'tool_calls', 'content_filter']);
    });

    it('streams role, text, finish, the usage chunk and [DONE], with usage:null before it', () => {
      const writer = new ChatStreamWriter({ id: 'chatcmpl-1', model: 'm-1', created: 1700000000, includeUsage: true });
      const text = writer.start() + writer.text('Hel') + writer.text('') + writer.text('lo') + writer.finish('end', USAGE);
      const events = parse(text);
      expect(events.every((event) => event.event === null)).to.equal(true);
      expect(events.pop()?.data).to.equal('[DONE]');
      const chunks = events.map((event) => JSON.parse(event.data) as Record<string, unknown>);
      const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1700000000, model: 'm-1' };
      const choice = (delta: object, finish: string | null) => [{ index: 0, delta, logprobs: null, finish_reason: finish }];
      expect(chunks).to.deep.equal([
        { ...base, choices: choice({ role: 'assistant', content: '' }, null), usage: null },
        { ...base, choices: choice({ content: 'Hel' }, null), usage: null },
        { ...base, choices: choice({ content: 'lo' }, null), usage: null },
        { ...base, choices: choice({}, 'stop'), usage: null },
        { ...base, choices: [], usage: buildChatCompletion(TEXT_TURN).usage },
      ]);
      for (const chunk of chunks) openAISchemas().assertValid('CreateChatCompletionStreamResponse', chunk);
    });

    it('leaves usage out entirely when include_usage was not asked for', () => {
      const writer = new ChatStreamWriter({ model: 'm-1', includeUsage: false });
      const events = parse(writer.start() + writer.text('Hi') + writer.finish('max_tokens', USAGE));
      expect(events.map((event) => event.data.includes('usage'))).to.deep.equal([false, false, false, false]);
      expect(JSON.parse(events[2].data)).to.have.nested.property('choices[0].finish_reason', 'length');
      expect(events[3].data).to.equal('[DONE]');
      expect(writer.usageChunk(USAGE)).to.equal('');
    });

    it('writes each chunk byte for byte as JSON.stringify writes the chunk object, keys in order', () => {
      for (const includeUsage of [true, false]) {
        const writer = new ChatStreamWriter({ id: 'chatcmpl-"q"\u2028', model: 'm/"é"', created: 1700000000, includeUsage });
        const events = parse(writer.start() + writer.text('a "b"\n') + writer.finish('end', USAGE)).slice(0, -1);
        for (const event of events) {
          const chunk = JSON.parse(event.data) as Record<string, unknown>;
          const ordered = { id: chunk.id, object: chunk.object, created: chunk.created, model: chunk.model, choices: chunk.choices, ...(includeUsage && { usage: chunk.usage }) };
          expect(event.data).to.equal(JSON.stringify(ordered));
          expect(chunk).to.include({ id: 'chatcmpl-"q"\u2028', model: 'm/"é"' });
        }
      }
    });

    it('counts tool calls on their own index and gives an argument-less call {}', () => {
      const writer = new ChatStreamWriter({ model: 'm-1', includeUsage: false });
      const text =
        writer.start() +
        writer.text('Let me look.') +
        writer.toolCallStart('call_a', 'now') +
        writer.toolCallStart('call_b', 'weather') +
        writer.toolCallArguments('{"city":') +
        writer.toolCallArguments('"Paris"}') +
        writer.finish('tool_use', USAGE);
      const chunks = parse(text).slice(0, -1).map((event) => JSON.parse(event.data) as { choices: Array<{ delta: unknown; finish_reason: unknown }> });
      for (const chunk of chunks) openAISchemas().assertValid('CreateChatCompletionStreamResponse', chunk);
      expect(chunks.slice(2, 7).map((chunk) => chunk.choices[0].delta)).to.deep.equal([
        { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'now', arguments: '' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '{}' } }] },
        { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '' } }] },
        { tool_calls: [{ index: 1, function: { arguments: '{"city":' } }] },
        { tool_calls: [{ index: 1, function: { arguments: '"Paris"}' } }] },
      ]);
      expect(chunks[7].choices[0]).to.deep.include({ delta: {}, finish_reason: 'tool_calls' });
    });
  });

  describe('responses', () => {
    it('builds the response object with usage details and the request echoed back', () => {
      const echo = responsesRequestEcho({ instructions: 'Be brief.', temperature: 0.2, tools: 'bogus', metadata: { k: 'v' } });
      expect(echo).to.deep.equal({ instructions: 'Be brief.', temperature: 0.2, metadata: { k: 'v' } });
      const response = buildResponse({ ...TEXT_TURN, id: 'resp_1' }, echo);
      expect(response).to.deep.include({
        id: 'resp_1',
        object: 'response',
        created_at: 1700000000,
        status: 'completed',
        error: null,
        incomplete_details: null,
        instructions: 'Be brief.',
        temperature: 0.2,
        tools: [],
        tool_choice: 'auto',
        metadata: { k: 'v' },
      });
      expect(response.output).to.have.length(1);
      expect(response.output[0]).to.deep.include({ type: 'message', status: 'completed', role: 'assistant' });
      expect(response.output[0].id).to.match(/^msg_\w+$/);
      expect(response.output[0]).to.have.deep.property('content', [{ type: 'output_text', text: 'Hello there', annotations: [], logprobs: [] }]);
      expect(response.usage).to.deep.equal({
        input_tokens: 3210,
        input_tokens_details: { cached_tokens: 3000, cache_write_tokens: 200 },
        output_tokens: 42,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 3252,
      });
      expect(responsesUsage(response as unknown as Record<string, unknown>)).to.deep.equal(COUNTS);
      openAISchemas().assertValid('Response', response);
    });

    it('turns tool calls into function_call items and max tokens into incomplete', () => {
      const response = buildResponse({ ...TOOL_TURN, stop: 'max_tokens' });
      expect(response.id).to.match(/^resp_\w+$/);
      expect(response.status).to.equal('incomplete');
      expect(response.incomplete_details).to.deep.equal({ reason: 'max_output_tokens' });
      expect(response.output.map((item) => [item.type, item.status])).to.deep.equal([
        ['message', 'completed'],
        ['function_call', 'completed'],
        ['function_call', 'incomplete'],
      ]);
      expect(response.output[1]).to.deep.include({ call_id: 'call_a', name: 'now', arguments: '{}' });
      expect(response.output[1].id).to.match(/^fc_\w+$/);
      openAISchemas().assertValid('Response', response);
    });

    it('streams the full event sequence with sequence numbers from 0', () => {
      const writer = new ResponsesStreamWriter({ id: 'resp_1', model: 'm-1', createdAt: 1700000000 });
      const events = typedPayloads(writer.start() + writer.text('Hel') + writer.text('lo') + writer.finish('end', USAGE));
      expect(events.map((event) => event.type)).to.deep.equal([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(events.map((event) => event.sequence_number)).to.deep.equal([...events.keys()]);
      expect(events[0]).to.have.nested.property('response.status', 'in_progress');
      expect(events[0]).to.not.have.nested.property('response.usage');
      expect(events[6]).to.include({ text: 'Hello', output_index: 0, content_index: 0 });
      const completed = events[9].response as ReturnType<typeof buildResponse>;
      expect(completed.status).to.equal('completed');
      expect(completed.output).to.deep.equal([events[8].item]);
      expect(completed.usage).to.deep.equal(buildResponse(TEXT_TURN).usage);
      for (const event of events) openAISchemas().assertValid(openAISchemas().responsesEventSchema(event.type) ?? 'missing', event);
    });

    it('streams function_call items after text and ends incomplete at max tokens', () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      const text =
        writer.start() +
        writer.text('Let me look.') +
        writer.toolCallStart('call_a', 'now') +
        writer.toolCallEnd() +
        writer.toolCallStart('call_b', 'weather') +
        writer.toolCallArguments('{"city":') +
        writer.finish('max_tokens', USAGE);
      const events = typedPayloads(text);
      for (const event of events) openAISchemas().assertValid(openAISchemas().responsesEventSchema(event.type) ?? 'missing', event);
      const calls = events.filter((event) => event.type.startsWith('response.function_call_arguments'));
      expect(calls.map((event) => [event.type, event.output_index, event.delta ?? event.arguments])).to.deep.equal([
        ['response.function_call_arguments.delta', 1, '{}'],
        ['response.function_call_arguments.done', 1, '{}'],
        ['response.function_call_arguments.delta', 2, '{"city":'],
        ['response.function_call_arguments.done', 2, '{"city":'],
      ]);
      const last = events[events.length - 1];
      expect(last.type).to.equal('response.incomplete');
      expect(last).to.have.nested.property('response.incomplete_details.reason', 'max_output_tokens');
      const output = (last.response as ReturnType<typeof buildResponse>).output;
      expect(output.map((item) => [item.type, item.status])).to.deep.equal([
        ['message', 'completed'],
        ['function_call', 'completed'],
        ['function_call', 'incomplete'],
      ]);
    });
  });

  describe('messages', () => {
    it('builds the message object with Anthropic usage and stop fields', () => {
      const message = buildMessage({ ...TOOL_TURN, id: 'msg_1' });
      expect(message).to.deep.equal({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'm-1',
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', id: 'call_a', name: 'now', input: {} },
          { type: 'tool_use', id: 'call_b', name: 'weather', input: { city: 'Paris' } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        stop_details: null,
        usage: { input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 3000, output_tokens: 42 },
      });
      expect(messagesUsage(message.usage as unknown as Record<string, unknown>)).to.deep.equal(COUNTS);
      const stopped = buildMessage({ ...TEXT_TURN, stop: 'stop_sequence', stopSequence: '###' });
      expect(stopped).to.include({ stop_reason: 'stop_sequence', stop_sequence: '###' });
      expect(stopped.id).to.equal('x1');
      expect(buildMessage({ ...TEXT_TURN, id: undefined }).id).to.match(/^msg_\w+$/);
      const stops: TurnStop[] = ['end', 'stop_sequence', 'max_tokens', 'tool_use', 'refusal'];
      expect(stops.map(messagesStopReason)).to.deep.equal(['end_turn', 'stop_sequence', 'max_tokens', 'tool_use', 'refusal']);
    });

    it('streams blocks with one index counter, tool input as input_json_delta, cumulative usage', () => {
      const writer = new MessagesStreamWriter({ id: 'msg_1', model: 'm-1' });
      const text =
        writer.start({ ...USAGE, outputTokens: 1 }) +
        writer.text('Let me ') +
        writer.text('look.') +
        writer.toolCallStart('toolu_a', 'now') +
        writer.toolCallEnd() +
        writer.toolCallStart('toolu_b', 'weather') +
        writer.toolCallArguments('{"city":') +
        writer.toolCallArguments('"Paris"}') +
        writer.finish('tool_use', USAGE);
      const usage = { input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 3000 };
      expect(typedPayloads(text)).to.deep.equal([
        {
          type: 'message_start',
          message: {
            id: 'msg_1', type: 'message', role: 'assistant', model: 'm-1', content: [],
            stop_reason: null, stop_sequence: null, stop_details: null, usage: { ...usage, output_tokens: 1 },
          },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'look.' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_a', name: 'now', input: {} } },
        { type: 'content_block_stop', index: 1 },
        { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_b', name: 'weather', input: {} } },
        { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
        { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } },
        { type: 'content_block_stop', index: 2 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { ...usage, output_tokens: 42 } },
        { type: 'message_stop' },
      ]);
    });

    it('reports the matched stop sequence and closes an open text block before message_delta', () => {
      const writer = new MessagesStreamWriter({ model: 'm-1' });
      const events = typedPayloads(writer.start() + writer.text('a') + writer.finish('stop_sequence', USAGE, '###'));
      expect(writer.id).to.match(/^msg_\w+$/);
      expect(events.map((event) => event.type)).to.deep.equal([
        'message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
      ]);
      expect(events[0]).to.have.nested.property('message.usage.input_tokens', 0);
      expect(events[4]).to.have.deep.property('delta', { stop_reason: 'stop_sequence', stop_sequence: '###' });
      expect(typedPayloads(writer.ping())).to.deep.equal([{ type: 'ping' }]);
    });
  });

  describe('read back by the official SDKs', () => {
    /** A client whose every request is answered with `sse` as an event stream. */
    const answering = (sse: string) => async (): Promise<Response> =>
      new Response(sse, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    const openai = (sse: string) => new OpenAI({ apiKey: 'k', baseURL: 'http://w.test/v1', fetch: answering(sse), maxRetries: 0 });
    const writeTools = (writer: ChatStreamWriter | ResponsesStreamWriter | MessagesStreamWriter) =>
      writer.start(USAGE) + writer.text('Let me look.') + writer.toolCallStart('call_a', 'now') +
      writer.toolCallStart('call_b', 'weather') + writer.toolCallArguments('{"city":') + writer.toolCallArguments('"Paris"}') +
      writer.finish('tool_use', USAGE);

    it('openai-node accumulates chat tool calls, the argument-less one included', async () => {
      const sse = writeTools(new ChatStreamWriter({ model: 'm-1', includeUsage: true }));
      const completion = await openai(sse).chat.completions.stream({ model: 'm-1', messages: [] }).finalChatCompletion();
      const calls = completion.choices[0].message.tool_calls ?? [];
      expect(calls.map((call) => call.type === 'function' && [call.id, call.function.name, call.function.arguments])).to.deep.equal([
        ['call_a', 'now', '{}'],
        ['call_b', 'weather', '{"city":"Paris"}'],
      ]);
      expect(completion.usage?.prompt_tokens).to.equal(3210);
    });

    it('openai-node accumulates Responses function calls', async () => {
      const sse = writeTools(new ResponsesStreamWriter({ model: 'm-1' }));
      const response = await openai(sse).responses.stream({ model: 'm-1', input: 'x' }).finalResponse();
      expect(response.output_text).to.equal('Let me look.');
      expect(response.output.map((item) => item.type === 'function_call' && [item.call_id, item.arguments])).to.deep.equal([
        false,
        ['call_a', '{}'],
        ['call_b', '{"city":"Paris"}'],
      ]);
    });

    it('the Anthropic SDK accumulates tool_use input from input_json_delta', async () => {
      const sse = writeTools(new MessagesStreamWriter({ model: 'm-1' }));
      const anthropic = new Anthropic({ apiKey: 'k', baseURL: 'http://w.test', fetch: answering(sse), maxRetries: 0 });
      const message = await anthropic.messages.stream({ model: 'm-1', max_tokens: 10, messages: [] }).finalMessage();
      expect(message.content.map((block) => (block.type === 'tool_use' ? block.input : block.type))).to.deep.equal(['text', {}, { city: 'Paris' }]);
      expect(message.stop_reason).to.equal('tool_use');
      expect(message.usage).to.deep.include({ input_tokens: 10, cache_read_input_tokens: 3000, output_tokens: 42 });
    });
  });
});
