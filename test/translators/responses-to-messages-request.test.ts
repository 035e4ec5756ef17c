/**
 * What the golden fixtures under test/conformance/responses-to-messages/request cannot show: key
 * order, the tool-name map the reply side reads, that the client's body is left as it came, and that
 * the items Tollgate's Responses writer produced come back upstream as the very blocks they came from.
 */
import { expect } from 'chai';
import { buildResponse, ResponsesStreamWriter } from '../../src/protocols/openai-responses/writer';
import { SseParser } from '../../src/protocols/sse';
import type { AssistantTurn } from '../../src/protocols/turn';
import { responsesToMessagesRequest } from '../../src/translators/responses-to-messages/request';
import type { TranslationContext } from '../../src/translators/types';
import { translationContext } from '../helpers/translation-context';

function contextFor(clientBody: Record<string, unknown>): TranslationContext {
  return translationContext('anthropic', clientBody);
}

type Request = { messages: Array<{ role: string; content: unknown }>; tools: Array<{ name: string }> };

const TOOL_LOOP = {
  model: 'claude-test',
  instructions: 'Be brief.',
  stream: true,
  user: 'u1',
  temperature: 0.5,
  tools: [{ type: 'function', name: 'web.search', parameters: { type: 'object' } }],
  parallel_tool_calls: false,
  input: [
    { role: 'user', content: 'Find cats' },
    { type: 'function_call', call_id: 'c1', name: 'web.search', arguments: '{"q":"cats"}' },
    { type: 'function_call_output', call_id: 'c1', output: 'found' },
  ],
};

/** A reply with every kind of part, as Anthropic would have produced it. */
const UPSTREAM_TURN: AssistantTurn = {
  model: 'claude-test',
  parts: [
    { type: 'thinking', text: 'The user wants the weather.', signature: 'EqQBCkgIARABsig==' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va==' },
    { type: 'text', text: 'Checking.' },
    { type: 'tool_call', id: 'toolu_01', name: 'weather', arguments: '{"city":"Paris"}' },
  ],
  stop: 'tool_use',
  usage: { inputTokens: 1, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 1, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' },
};

/** The Messages blocks the upstream sent for UPSTREAM_TURN, which it demands back verbatim. */
const UPSTREAM_BLOCKS = [
  { type: 'thinking', thinking: 'The user wants the weather.', signature: 'EqQBCkgIARABsig==' },
  { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va==' },
  { type: 'text', text: 'Checking.' },
  { type: 'tool_use', id: 'toolu_01', name: 'weather', input: { city: 'Paris' } },
];

/** The next request of a tool loop: the client sends the reply's output items back with its result. */
function nextTurnBody(output: unknown[]): Record<string, unknown> {
  return {
    model: 'claude-test',
    tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' } }],
    reasoning: { effort: 'medium' },
    input: [{ role: 'user', content: 'Weather in Paris?' }, ...output, { type: 'function_call_output', call_id: 'toolu_01', output: '21 C' }],
  };
}

describe('responsesToMessagesRequest', () => {
  it('puts model, system, messages and max_tokens first, in that order', () => {
    const keys = Object.keys(responsesToMessagesRequest(contextFor(structuredClone(TOOL_LOOP))));
    expect(keys.slice(0, 4)).to.deep.equal(['model', 'system', 'messages', 'max_tokens']);
  });

  it('records every rewritten tool name so replies can map it back, and rewrites calls the same way', () => {
    const ctx = contextFor(structuredClone(TOOL_LOOP));
    const request = responsesToMessagesRequest(ctx) as Request;
    const sent = request.tools[0].name;
    expect(sent).to.match(/^[a-zA-Z0-9_-]{1,128}$/);
    expect(ctx.toolNames.client(sent)).to.equal('web.search');
    expect(request.messages[1].content).to.deep.equal([{ type: 'tool_use', id: 'c1', name: sent, input: { q: 'cats' } }]);
  });

  it('leaves the client body unchanged', () => {
    const body = structuredClone(TOOL_LOOP);
    responsesToMessagesRequest(contextFor(body));
    expect(body).to.deep.equal(TOOL_LOOP);
  });

  it("sends back the thinking, text and tool call of the writer's non-streamed reply exactly as the upstream produced them", () => {
    const request = responsesToMessagesRequest(contextFor(nextTurnBody(buildResponse(UPSTREAM_TURN).output))) as Request;
    expect(request.messages).to.deep.equal([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: UPSTREAM_BLOCKS },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '21 C' }] },
    ]);
  });

  it("does the same for the output of the writer's stream", () => {
    const writer = new ResponsesStreamWriter({ model: 'claude-test' });
    const sse =
      writer.start() +
      writer.thinking('') + writer.thinking('The user wants ') + writer.thinking('the weather.') + writer.thinkingSignature('EqQBCkgIARABsig==') + writer.blockEnd() +
      writer.redactedThinking('EmwKAhgBEgy3va==') +
      writer.text('Checking.') + writer.blockEnd() +
      writer.toolCallStart('toolu_01', 'weather') + writer.toolCallArguments('{"city":') + writer.toolCallArguments('"Paris"}') + writer.blockEnd() +
      writer.finish('tool_use', UPSTREAM_TURN.usage);
    const completed = new SseParser().push(Buffer.from(sse)).map((event) => JSON.parse(event.data) as { type: string; response?: { output: unknown[] } }).pop();
    expect(completed?.type).to.equal('response.completed');
    const request = responsesToMessagesRequest(contextFor(nextTurnBody(completed?.response?.output ?? []))) as Request;
    expect(request.messages[1]).to.deep.equal({ role: 'assistant', content: UPSTREAM_BLOCKS });
  });

  const malformed: Array<{ name: string; body: Record<string, unknown>; param: string }> = [
    { name: 'input is missing', body: { model: 'm' }, param: 'input' },
    { name: 'an item is not an object', body: { model: 'm', input: ['hi'] }, param: 'input[0]' },
    { name: 'an item has neither type, role nor id', body: { model: 'm', input: [{ content: 'x' }] }, param: 'input[0]' },
    { name: 'instructions is not a string', body: { model: 'm', input: 'x', instructions: ['a'] }, param: 'instructions' },
    { name: 'a message part is not an object', body: { model: 'm', input: [{ role: 'user', content: ['x'] }] }, param: 'input[0].content[0]' },
    { name: 'an input_text has no text', body: { model: 'm', input: [{ role: 'user', content: [{ type: 'input_text' }] }] }, param: 'input[0].content[0].text' },
    { name: 'an assistant message carries an image', body: { model: 'm', input: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x.test/a.png' }] }] }, param: 'input[1].content[0].type' },
    { name: 'a function_call has no name', body: { model: 'm', input: [{ type: 'function_call', call_id: 'c', arguments: '{}' }] }, param: 'input[0].name' },
    { name: 'function_call arguments are an object', body: { model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }] }, param: 'input[0].arguments' },
    { name: 'encrypted_content is not a string', body: { model: 'm', input: [{ type: 'reasoning', summary: [], encrypted_content: 7 }, { role: 'user', content: 'x' }] }, param: 'input[0].encrypted_content' },
    { name: 'a reasoning summary part has no text', body: { model: 'm', input: [{ type: 'reasoning', summary: [{ type: 'summary_text' }], encrypted_content: 's' }] }, param: 'input[0].summary[0].text' },
    { name: 'a tool has no name', body: { model: 'm', input: 'x', tools: [{ type: 'function' }] }, param: 'tools[0].name' },
    { name: 'tool parameters are not an object', body: { model: 'm', input: 'x', tools: [{ type: 'function', name: 'f', parameters: 'none' }] }, param: 'tools[0].parameters' },
    { name: 'tool_choice is an unknown mode', body: { model: 'm', input: 'x', tools: [{ type: 'function', name: 'f' }], tool_choice: 'sometimes' }, param: 'tool_choice' },
    { name: 'parallel_tool_calls is not a boolean', body: { model: 'm', input: 'x', parallel_tool_calls: 'no' }, param: 'parallel_tool_calls' },
    { name: 'temperature is a string', body: { model: 'm', input: 'x', temperature: 'hot' }, param: 'temperature' },
    { name: 'reasoning is not an object', body: { model: 'm', input: 'x', reasoning: 'high' }, param: 'reasoning' },
    { name: 'text.format is not an object', body: { model: 'm', input: 'x', text: { format: 'json' } }, param: 'text.format' },
    { name: 'user is not a string', body: { model: 'm', input: 'x', user: 42 }, param: 'user' },
  ];
  for (const { name, body, param } of malformed) {
    it(`answers 400 naming ${param} when ${name}`, () => {
      expect(() => responsesToMessagesRequest(contextFor(body)))
        .to.throw()
        .that.satisfies((err: { status: number; param: string }) => err.status === 400 && err.param === param);
    });
  }
});
