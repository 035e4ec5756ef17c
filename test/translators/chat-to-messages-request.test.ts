/**
 * What the golden fixtures under test/conformance/chat-to-messages/request cannot show: key order,
 * the tool-name map the reply side reads, and that the client's body is left as it came.
 */
import { expect } from 'chai';
import { chatToMessagesRequest } from '../../src/translators/chat-to-messages/request';
import type { TranslationContext } from '../../src/translators/types';
import { translationContext } from '../helpers/translation-context';

function contextFor(clientBody: Record<string, unknown>): TranslationContext {
  return translationContext('anthropic', clientBody);
}

const TOOL_LOOP = {
  model: 'claude-test',
  stream: true,
  user: 'u1',
  stop: 'END',
  temperature: 0.5,
  tools: [{ type: 'function', function: { name: 'web.search', parameters: { type: 'object' } } }],
  parallel_tool_calls: false,
  messages: [
    { role: 'user', content: 'Find cats' },
    { role: 'system', content: 'Be brief.' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'web.search', arguments: '{"q":"cats"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'found' },
  ],
};

describe('chatToMessagesRequest', () => {
  it('puts model, system, messages and max_tokens first, in that order', () => {
    const keys = Object.keys(chatToMessagesRequest(contextFor(structuredClone(TOOL_LOOP))));
    expect(keys.slice(0, 4)).to.deep.equal(['model', 'system', 'messages', 'max_tokens']);
  });

  it('gives the same output, key order included, for the same request', () => {
    const first = JSON.stringify(chatToMessagesRequest(contextFor(structuredClone(TOOL_LOOP))));
    const second = JSON.stringify(chatToMessagesRequest(contextFor(structuredClone(TOOL_LOOP))));
    expect(second).to.equal(first);
  });

  it('records every rewritten tool name so replies can map it back', () => {
    const ctx = contextFor(structuredClone(TOOL_LOOP));
    const request = chatToMessagesRequest(ctx) as { tools: Array<{ name: string }> };
    const sent = request.tools[0].name;
    expect(sent).to.match(/^[a-zA-Z0-9_-]{1,128}$/);
    expect(ctx.toolNames.client(sent)).to.equal('web.search');
  });

  it('leaves the client body unchanged', () => {
    const body = structuredClone(TOOL_LOOP);
    chatToMessagesRequest(contextFor(body));
    expect(body).to.deep.equal(TOOL_LOOP);
  });

  it('does not share the thinking blocks it sends back with the client body', () => {
    const thinking = { type: 'thinking', thinking: 'plan', signature: 'sig' };
    const body = {
      model: 'claude-test',
      messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Yo', thinking_blocks: [thinking] }, { role: 'user', content: 'Bye' }],
    };
    const request = chatToMessagesRequest(contextFor(body)) as { messages: Array<{ content: unknown[] }> };
    expect(request.messages[1].content[0]).to.deep.equal(thinking);
    expect(request.messages[1].content[0]).to.not.equal(thinking);
  });

  const malformed: Array<{ name: string; body: Record<string, unknown>; param: string }> = [
    { name: 'messages is missing', body: { model: 'm' }, param: 'messages' },
    { name: 'a message is not an object', body: { model: 'm', messages: ['hi'] }, param: 'messages[0]' },
    { name: 'a role is unknown', body: { model: 'm', messages: [{ role: 'narrator', content: 'x' }] }, param: 'messages[0].role' },
    { name: 'a system part is an image', body: { model: 'm', messages: [{ role: 'system', content: [{ type: 'image_url' }] }, { role: 'user', content: 'x' }] }, param: 'messages[0].content[0].type' },
    { name: 'a tool message lacks tool_call_id', body: { model: 'm', messages: [{ role: 'tool', content: 'x' }] }, param: 'messages[0].tool_call_id' },
    { name: 'tool call arguments are an object', body: { model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }] }, param: 'messages[1].tool_calls[0].function.arguments' },
    { name: 'a stop entry is not a string', body: { model: 'm', messages: [{ role: 'user', content: 'x' }], stop: ['a', 3] }, param: 'stop[1]' },
    { name: 'temperature is a string', body: { model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }, param: 'temperature' },
    { name: 'reasoning_effort is unknown', body: { model: 'm', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'extreme' }, param: 'reasoning_effort' },
    { name: 'tool_choice is an unknown mode', body: { model: 'm', messages: [{ role: 'user', content: 'x' }], tool_choice: 'sometimes' }, param: 'tool_choice' },
  ];
  for (const { name, body, param } of malformed) {
    it(`answers 400 naming ${param} when ${name}`, () => {
      expect(() => chatToMessagesRequest(contextFor(body)))
        .to.throw()
        .that.satisfies((err: { status: number; param: string }) => err.status === 400 && err.param === param);
    });
  }
});
