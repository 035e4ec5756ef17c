import { expect } from 'chai';
import OpenAI from 'openai';
import { GatewayError } from '../../src/kernel/errors';
import {
  buildResponse,
  newResponsesId,
  responseError,
  ResponsesStreamWriter,
  type ResponseObject,
} from '../../src/protocols/openai-responses/writer';
import { SseParser } from '../../src/protocols/sse';
import type { AssistantTurn } from '../../src/protocols/turn';
import type { Usage } from '../../src/protocols/types';
import { openAISchemas } from '../helpers/openai-schemas';

const USAGE: Usage = { inputTokens: 10, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 42, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' };

type Payload = Record<string, unknown> & { type: string; sequence_number: number };

/** The payloads of a stream, each checked for `event:` = `type` and against its OpenAPI event schema. */
function validEvents(text: string): Payload[] {
  const parser = new SseParser();
  const events = parser.push(Buffer.from(text));
  expect(parser.hasPartialEvent(), 'stream ends mid-event').to.equal(false);
  return events.map((event) => {
    const payload = JSON.parse(event.data) as Payload;
    expect(event.event, 'event line').to.equal(payload.type);
    const schema = openAISchemas().responsesEventSchema(payload.type);
    expect(schema, `schema for ${payload.type}`).to.be.a('string');
    openAISchemas().assertValid(schema as string, payload);
    return payload;
  });
}

const THINKING_TURN: AssistantTurn = {
  model: 'm-1',
  parts: [
    { type: 'thinking', text: 'The user greets me.', signature: 'sig-1' },
    { type: 'redacted_thinking', data: 'opaque==' },
    { type: 'text', text: 'Hello!' },
  ],
  stop: 'end',
  usage: USAGE,
};

describe('Responses writer: reasoning and failure', function () {
  before(function () {
    this.timeout(60_000); // the OpenAPI yaml is ~3 MB
    openAISchemas();
  });

  describe('buildResponse', () => {
    it('turns thinking into a reasoning item with the signature as encrypted_content', () => {
      const response = buildResponse(THINKING_TURN);
      openAISchemas().assertValid('Response', response);
      const [thinking, redacted, message] = response.output;
      expect(thinking).to.deep.include({
        type: 'reasoning',
        status: 'completed',
        summary: [{ type: 'summary_text', text: 'The user greets me.' }],
        encrypted_content: 'sig-1',
      });
      expect(thinking.id).to.match(/^rs_\w+$/);
      openAISchemas().assertValid('ReasoningItem', thinking);
      expect(message).to.deep.include({ type: 'message', content: [{ type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] }] });
      expect(redacted.id).to.not.equal(thinking.id);
    });

    it('keeps a redacted block as an empty summary with the data marked redacted:', () => {
      const redacted = buildResponse(THINKING_TURN).output[1];
      expect(redacted).to.deep.include({ type: 'reasoning', summary: [], encrypted_content: 'redacted:opaque==', status: 'completed' });
      openAISchemas().assertValid('ReasoningItem', redacted);
    });

    it('gives omitted thinking an empty summary and a thinking block cut off by max tokens an incomplete status', () => {
      const response = buildResponse({ ...THINKING_TURN, parts: [{ type: 'thinking', text: '', signature: 'sig-2' }], stop: 'max_tokens' });
      expect(response.status).to.equal('incomplete');
      expect(response.output).to.have.length(1);
      expect(response.output[0]).to.deep.include({ summary: [], encrypted_content: 'sig-2', status: 'incomplete' });
      openAISchemas().assertValid('Response', response);
    });

    it('mints rs_ ids that differ', () => {
      expect(newResponsesId('rs')).to.match(/^rs_[0-9a-f]{24}$/);
      expect(newResponsesId('rs')).to.not.equal(newResponsesId('rs'));
    });
  });

  describe('stream', () => {
    it('streams a reasoning item with its summary part, then a message', () => {
      const writer = new ResponsesStreamWriter({ id: 'resp_1', model: 'm-1', createdAt: 1700000000 });
      const text =
        writer.start() +
        writer.thinking('') +
        writer.thinking('Let me ') +
        writer.thinking('think.') +
        writer.thinkingSignature('sig-1') +
        writer.blockEnd() +
        writer.text('Hi') +
        writer.blockEnd() +
        writer.finish('end', USAGE);
      const events = validEvents(text);
      expect(events.map((event) => event.type)).to.deep.equal([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.reasoning_summary_part.added',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.done',
        'response.reasoning_summary_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(events.map((event) => event.sequence_number)).to.deep.equal([...events.keys()]);
      expect(events[2]).to.deep.include({ output_index: 0 });
      expect(events[2].item).to.deep.include({ type: 'reasoning', status: 'in_progress', summary: [], encrypted_content: null });
      const rsId = (events[2].item as { id: string }).id;
      expect(rsId).to.match(/^rs_\w+$/);
      expect(events[3]).to.deep.include({ item_id: rsId, output_index: 0, summary_index: 0, part: { type: 'summary_text', text: '' } });
      expect(events[5]).to.deep.include({ item_id: rsId, delta: 'think.' });
      expect(events[6]).to.deep.include({ text: 'Let me think.' });
      expect(events[7]).to.deep.include({ part: { type: 'summary_text', text: 'Let me think.' } });
      expect(events[8].item).to.deep.equal({
        type: 'reasoning',
        id: rsId,
        status: 'completed',
        summary: [{ type: 'summary_text', text: 'Let me think.' }],
        encrypted_content: 'sig-1',
      });
      expect(events[9]).to.deep.include({ output_index: 1 });
      const completed = events[15].response as ResponseObject;
      expect(completed.output).to.deep.equal([events[8].item, events[14].item]);
    });

    it('closes a reasoning item when text or a tool call follows without blockEnd', () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      const events = validEvents(
        writer.start() + writer.thinking('a') + writer.toolCallStart('call_1', 'now') + writer.toolCallEnd() + writer.thinking('b') + writer.text('c') + writer.finish('end', USAGE),
      );
      const done = events.filter((event) => event.type === 'response.output_item.done').map((event) => [event.output_index, (event.item as { type: string }).type]);
      expect(done).to.deep.equal([[0, 'reasoning'], [1, 'function_call'], [2, 'reasoning'], [3, 'message']]);
    });

    it('gives a signature with no thinking text an item with an empty summary and no summary events', () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      const events = validEvents(writer.start() + writer.thinkingSignature('sig-only') + writer.blockEnd() + writer.finish('end', USAGE));
      expect(events.map((event) => event.type).slice(2)).to.deep.equal(['response.output_item.added', 'response.output_item.done', 'response.completed']);
      expect(events[3].item).to.deep.include({ summary: [], encrypted_content: 'sig-only', status: 'completed' });
    });

    it('emits a redacted block as a whole reasoning item, added then done', () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      const events = validEvents(writer.start() + writer.text('x') + writer.redactedThinking('opaque==') + writer.finish('end', USAGE));
      const tail = events.slice(-4);
      expect(tail.map((event) => event.type)).to.deep.equal([
        'response.output_item.done',
        'response.output_item.added',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(tail[1]).to.deep.include({ output_index: 1 });
      expect(tail[2].item).to.deep.include({ type: 'reasoning', summary: [], encrypted_content: 'redacted:opaque==', status: 'completed' });
      expect((tail[3].response as ResponseObject).output.map((item) => item.type)).to.deep.equal(['message', 'reasoning']);
    });

    it('returns nothing from blockEnd when no block is open', () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      writer.start();
      expect(writer.blockEnd()).to.equal('');
    });
  });

  describe('fail', () => {
    it('ends the stream with response.failed carrying the error and the items so far', () => {
      const writer = new ResponsesStreamWriter({ id: 'resp_f', model: 'm-1' });
      const error = new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', 'The upstream stream broke off.');
      const events = validEvents(writer.start() + writer.thinking('hmm') + writer.blockEnd() + writer.text('Hal') + writer.fail(error));
      const last = events[events.length - 1];
      expect(last.type).to.equal('response.failed');
      expect(last.sequence_number).to.equal(events.length - 1);
      expect(events.filter((event) => event.type.endsWith('.completed') || event.type.endsWith('.incomplete'))).to.deep.equal([]);
      const response = last.response as ResponseObject;
      expect(response).to.deep.include({
        id: 'resp_f',
        status: 'failed',
        completed_at: null,
        incomplete_details: null,
        error: { code: 'server_error', message: 'The upstream stream broke off.' },
      });
      expect(response.output.map((item) => [item.type, item.status])).to.deep.equal([
        ['reasoning', 'completed'],
        ['message', 'incomplete'],
      ]);
      expect(response.output[1]).to.have.nested.property('content[0].text', 'Hal');
      expect(response).to.not.have.property('usage');
    });

    it('maps gateway errors onto the codes the OpenAPI ResponseErrorCode enum allows', () => {
      // No code in the error table answers 429 yet, so one is made by giving an error a 429 spec.
      const limited = new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', 'slow down');
      Object.defineProperty(limited, 'spec', { value: { ...limited.spec, status: 429 } });
      const cases = [
        [new GatewayError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'timed out'), 'server_error'],
        [new GatewayError('TOLLGATE_ERR_INTERNAL', 'oops'), 'server_error'],
        [new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', 'bad'), 'invalid_prompt'],
        [limited, 'rate_limit_exceeded'],
      ] as const;
      for (const [error, code] of cases) {
        const body = responseError(error);
        expect(body).to.deep.equal({ code, message: error.message });
        openAISchemas().assertValid('ResponseError', body);
      }
    });
  });

  describe('read back by openai-node', () => {
    const openai = (sse: string) =>
      new OpenAI({
        apiKey: 'k',
        baseURL: 'http://w.test/v1',
        maxRetries: 0,
        fetch: async () => new Response(sse, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
      });

    it('accumulates the reasoning summary and keeps encrypted_content for the next turn', async () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      const sse =
        writer.start() + writer.thinking('Let me ') + writer.thinking('think.') + writer.thinkingSignature('sig-1') + writer.blockEnd() +
        writer.redactedThinking('opaque==') + writer.text('Hi') + writer.finish('end', USAGE);
      const response = await openai(sse).responses.stream({ model: 'm-1', input: 'x' }).finalResponse();
      expect(response.output_text).to.equal('Hi');
      const reasoning = response.output.filter((item) => item.type === 'reasoning');
      expect(reasoning.map((item) => [item.summary.map((part) => part.text), item.encrypted_content])).to.deep.equal([
        [['Let me think.'], 'sig-1'],
        [[], 'redacted:opaque=='],
      ]);
    });

    it('sees a failed response with its error', async () => {
      const writer = new ResponsesStreamWriter({ model: 'm-1' });
      const sse = writer.start() + writer.text('Hal') + writer.fail(new GatewayError('TOLLGATE_ERR_UPSTREAM_UNREACHABLE', 'gone'));
      const events: string[] = [];
      const stream = openai(sse).responses.stream({ model: 'm-1', input: 'x' });
      for await (const event of stream) events.push(event.type);
      expect(events[events.length - 1]).to.equal('response.failed');
      const response = await stream.finalResponse();
      expect(response.status).to.equal('failed');
      expect(response.error).to.deep.equal({ code: 'server_error', message: 'gone' });
    });
  });
});
