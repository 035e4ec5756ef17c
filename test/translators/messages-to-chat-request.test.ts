import { expect } from 'chai';
import type { ModelConfig } from '../../src/config/types';
import type { Json } from '../../src/json';
import { GatewayError } from '../../src/kernel/errors';
import { messagesToChatRequest } from '../../src/translators/messages-to-chat/request';
import type { TranslationContext } from '../../src/translators/types';
import { translationContext } from '../helpers/translation-context';

function context(clientBody: Json, model: Partial<ModelConfig> = {}): TranslationContext {
  return translationContext('openai', clientBody, model);
}

function request(fields: Json, model: Partial<ModelConfig> = {}): Json {
  return messagesToChatRequest(context({ model: 'gpt-test', max_tokens: 512, messages: [{ role: 'user', content: 'Hi' }], ...fields }, model));
}

function refusal(fields: Json, model: Partial<ModelConfig> = {}): GatewayError {
  try {
    request(fields, model);
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected the request to be refused');
}

describe('messagesToChatRequest', () => {
  it('translates a Claude Code style tool loop into the chat message order OpenAI requires', () => {
    const body = request({
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
      stream: true,
      tools: [{ name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'Open a.txt' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Read it.', signature: 'c2ln' },
            { type: 'text', text: 'Reading.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'hello' }] },
            { type: 'text', text: 'Now summarise.' },
          ],
        },
      ],
    });
    expect(body).to.deep.equal({
      model: 'gpt-upstream',
      max_completion_tokens: 512,
      stream: true,
      stream_options: { include_usage: true },
      tools: [
        { type: 'function', function: { name: 'Read', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
      ],
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: 'Open a.txt' },
        {
          role: 'assistant',
          content: 'Reading.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"path":"a.txt"}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: [{ type: 'text', text: 'hello' }] },
        { role: 'user', content: [{ type: 'text', text: 'Now summarise.' }] },
      ],
    });
  });

  it('records rewritten tool names so replies can be mapped back to the client names', () => {
    const ctx = context({
      model: 'gpt-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ name: 'mcp__srv__tool.with.dots', input_schema: { type: 'object' } }],
    });
    const body = messagesToChatRequest(ctx);
    const sent = ((body.tools as Json[])[0].function as Json).name as string;
    expect(sent).to.match(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(ctx.toolNames.client(sent)).to.equal('mcp__srv__tool.with.dots');
  });

  it('leaves the client body untouched', () => {
    const clientBody = {
      model: 'gpt-test',
      max_tokens: 10,
      system: 'S',
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', is_error: true, content: [{ type: 'text', text: 'boom' }] }] }],
    };
    const copy = structuredClone(clientBody);
    messagesToChatRequest(context(clientBody));
    expect(clientBody).to.deep.equal(copy);
  });

  it('buckets thinking budgets into reasoning efforts at 1024 and 4096', () => {
    const cases: Array<[number, string]> = [
      [1, 'low'],
      [1024, 'low'],
      [1025, 'medium'],
      [4096, 'medium'],
      [4097, 'high'],
      [60000, 'high'],
    ];
    for (const [budget, effort] of cases) {
      const body = request({ max_tokens: 64000, thinking: { type: 'enabled', budget_tokens: budget } });
      expect(body.reasoning_effort, String(budget)).to.equal(effort);
    }
  });

  it('passes every Anthropic effort level through as reasoning_effort', () => {
    for (const effort of ['low', 'medium', 'high', 'xhigh', 'max']) {
      expect(request({ thinking: { type: 'adaptive' }, output_config: { effort } }).reasoning_effort).to.equal(effort);
    }
  });

  it('moves a PDF returned by a tool to the follow-up user message, keeping text in the tool message', () => {
    const body = request({
      messages: [
        { role: 'user', content: 'Fetch it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'fetch', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [
                { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } },
                { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } },
              ],
            },
          ],
        },
      ],
    });
    expect((body.messages as Json[]).slice(2)).to.deep.equal([
      { role: 'tool', tool_call_id: 't1', content: [{ type: 'text', text: 'notes' }] },
      { role: 'user', content: [{ type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBE' } }] },
    ]);
  });

  it('still says a tool failed when the failed result has no text', () => {
    const body = request({
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true }] },
      ],
    });
    expect((body.messages as Json[])[1]).to.deep.equal({ role: 'tool', tool_call_id: 't1', content: 'Error' });
  });

  it('drops an assistant turn that held only reasoning', () => {
    const body = request({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }] },
        { role: 'user', content: 'b' },
      ],
    });
    expect(body.messages).to.deep.equal([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ]);
  });

  it('refuses with a 400 GatewayError that names the field', () => {
    const cases: Array<[string, Json, string]> = [
      ['container', { container: 'c1' }, 'container'],
      ['mcp_servers', { mcp_servers: [{ type: 'url', url: 'https://m', name: 'm' }] }, 'mcp_servers'],
      ['server tool', { tools: [{ type: 'bash_20250124', name: 'bash' }] }, 'tools[0]'],
      ['five stops', { stop_sequences: ['1', '2', '3', '4', '5'] }, 'stop_sequences'],
      ['unknown thinking', { thinking: { type: 'sometimes' } }, 'thinking.type'],
      ['bad effort', { thinking: { type: 'adaptive' }, output_config: { effort: 'extreme' } }, 'output_config.effort'],
      ['budget missing', { thinking: { type: 'enabled' } }, 'thinking.budget_tokens'],
      ['unknown tool_choice', { tools: [{ name: 'a', input_schema: {} }], tool_choice: { type: 'sometimes' } }, 'tool_choice.type'],
      ['text output format', { output_config: { format: { type: 'text' } } }, 'output_config.format.type'],
      ['image in assistant', { messages: [{ role: 'assistant', content: [{ type: 'image', source: { type: 'url', url: 'https://i' } }] }] }, 'messages[0].content[0]'],
      ['tool_use in user', { messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'x', name: 'y', input: {} }] }] }, 'messages[0].content[0]'],
      ['messages not array', { messages: 'hi' }, 'messages'],
    ];
    for (const [name, fields, param] of cases) {
      const error = refusal(fields);
      expect(error.code, name).to.equal('TOLLGATE_ERR_REQUEST_INVALID');
      expect(error.status, name).to.equal(400);
      expect(error.param, name).to.equal(param);
      expect(error.message, name).to.contain(param);
    }
  });

  it('allows empty container-like fields that ask for nothing', () => {
    expect(request({ mcp_servers: [], container: null })).to.not.have.any.keys('mcp_servers', 'container');
  });
});
