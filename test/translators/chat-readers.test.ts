import { expect } from 'chai';
import { GatewayError } from '../../src/kernel/errors';
import { MessagesStreamWriter } from '../../src/protocols/anthropic-messages/writer';
import { SseParser, type SseEvent } from '../../src/protocols/sse';
import type { TurnStop, TurnStreamWriter, WebSource } from '../../src/protocols/turn';
import type { Usage } from '../../src/protocols/types';
import { chatReplyHasUsage, readChatReply } from '../../src/translators/readers/chat-reply';
import { ChatStreamReader } from '../../src/translators/readers/chat-stream';
import { ToolNameMap } from '../../src/translators/tool-names';

type Call = [string, ...unknown[]];

/** A writer that records every call and answers with a token naming it, so returned text can be checked too. */
class RecordingWriter implements TurnStreamWriter {
  readonly calls: Call[] = [];

  private record(method: string, ...args: unknown[]): string {
    this.calls.push([method, ...args]);
    return `<${method}>`;
  }

  start(usage?: Usage): string {
    return usage === undefined ? this.record('start') : this.record('start', usage);
  }
  text(delta: string): string {
    return this.record('text', delta);
  }
  toolCallStart(id: string, name: string): string {
    return this.record('toolCallStart', id, name);
  }
  toolCallArguments(fragment: string): string {
    return this.record('toolCallArguments', fragment);
  }
  toolCallEnd(): string {
    return this.record('toolCallEnd');
  }
  thinking(delta: string): string {
    return this.record('thinking', delta);
  }
  webSearchStart(id: string, query: string): string {
    return this.record('webSearchStart', id, query);
  }
  webSearchEnd(id: string, sources: readonly WebSource[], error: string | null): string {
    return this.record('webSearchEnd', id, sources, error);
  }
  citations(citedLength: number, sources: readonly WebSource[]): string {
    return this.record('citations', citedLength, sources);
  }
  thinkingSignature(signature: string): string {
    return this.record('thinkingSignature', signature);
  }
  redactedThinking(data: string): string {
    return this.record('redactedThinking', data);
  }
  blockEnd(): string {
    return this.record('blockEnd');
  }
  finish(stop: TurnStop, usage: Usage, stopSequence?: string | null): string {
    return stopSequence === undefined ? this.record('finish', stop, usage) : this.record('finish', stop, usage, stopSequence);
  }
  fail(error: GatewayError): string {
    return this.record('fail', error.code, error.message);
  }
}

const ZERO_COUNTS = { inputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 0, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {} };

function frame(data: unknown): SseEvent {
  return { event: null, data: typeof data === 'string' ? data : JSON.stringify(data) };
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): SseEvent {
  return frame({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-upstream',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
}

function usageChunk(usage: Record<string, unknown>): SseEvent {
  return frame({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-upstream', choices: [], usage });
}

const DONE = frame('[DONE]');

/** Feeds events through a fresh reader and returns the reader, the writer and the text produced per event. */
function run(events: SseEvent[], toolNames = new ToolNameMap(64)) {
  const reader = new ChatStreamReader(toolNames);
  const writer = new RecordingWriter();
  const outputs = events.map((event) => reader.read(event, writer));
  return { reader, writer, outputs };
}

function methods(writer: RecordingWriter): string[] {
  return writer.calls.map(([method]) => method);
}

describe('ChatStreamReader', () => {
  it('relays text as it arrives and finishes at [DONE], not at the finish reason', () => {
    const { reader, writer, outputs } = run([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({}, 'stop'),
    ]);
    expect(writer.calls).to.deep.equal([['start'], ['text', 'Hel'], ['text', 'lo']]);
    expect(outputs).to.deep.equal(['<start>', '<text>', '<text>', '']);
    expect(reader.ended).to.equal(false);

    const done = reader.read(DONE, writer);
    expect(done).to.equal('<finish>');
    expect(writer.calls.at(-1)).to.deep.equal(['finish', 'end', { ...ZERO_COUNTS, source: 'partial' }]);
    expect(reader.ended).to.equal(true);
    expect(reader.upstreamError).to.equal(null);
  });

  it('reports null usage when the upstream sent no usage chunk', () => {
    const { reader } = run([chunk({ content: 'Hi' }, 'stop'), DONE]);
    expect(reader.usage()).to.equal(null);
  });

  it('splits cached tokens out of prompt_tokens and hands the usage to finish', () => {
    const { reader, writer } = run([
      chunk({ content: 'Hi' }),
      chunk({}, 'stop'),
      usageChunk({ prompt_tokens: 1200, completion_tokens: 7, total_tokens: 1207, prompt_tokens_details: { cached_tokens: 1024 } }),
      DONE,
    ]);
    const usage = { inputTokens: 176, cacheReadTokens: 1024, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 7, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' };
    expect(reader.usage()).to.deep.equal(usage);
    expect(writer.calls.at(-1)).to.deep.equal(['finish', 'end', usage]);
  });

  it('takes cache writes out of the input count too when an upstream reports them', () => {
    const { reader } = run([
      chunk({}, 'stop'),
      usageChunk({ prompt_tokens: 500, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 300 } }),
    ]);
    expect(reader.usage()).to.deep.equal({ inputTokens: 100, cacheReadTokens: 100, cacheWriteTokens: 300, cacheWrite1hTokens: 0, outputTokens: 3, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' });
  });

  it('starts a tool call per new index, mapping names back, and streams argument fragments as they come', () => {
    const toolNames = new ToolNameMap(64);
    const longName = `lookup_${'x'.repeat(70)}`;
    const upstreamName = toolNames.upstream(longName);
    const { writer } = run(
      [
        chunk({ role: 'assistant', content: null }),
        chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: upstreamName, arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '{"q":1}' } }] }),
        chunk({}, 'tool_calls'),
        DONE,
      ],
      toolNames,
    );
    expect(writer.calls).to.deep.equal([
      ['start'],
      ['toolCallStart', 'call_a', 'weather'],
      ['toolCallArguments', '{"city":'],
      ['toolCallArguments', '"Paris"}'],
      ['toolCallEnd'],
      ['toolCallStart', 'call_b', longName],
      ['toolCallArguments', '{"q":1}'],
      ['finish', 'tool_use', { ...ZERO_COUNTS, source: 'partial' }],
    ]);
  });

  it('reads parallel tool calls that arrive whole in one chunk, in order', () => {
    const { writer } = run([
      chunk({
        tool_calls: [
          { index: 0, id: 'call_a', type: 'function', function: { name: 'now', arguments: '{}' } },
          { index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      }),
      chunk({}, 'tool_calls'),
      DONE,
    ]);
    expect(writer.calls.slice(1, -1)).to.deep.equal([
      ['toolCallStart', 'call_a', 'now'],
      ['toolCallArguments', '{}'],
      ['toolCallEnd'],
      ['toolCallStart', 'call_b', 'weather'],
      ['toolCallArguments', '{"city":"Oslo"}'],
    ]);
  });

  it('treats a new id under the same index as a new call (upstreams that number every call 0)', () => {
    const { writer } = run([
      chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '{"x":1}' } }] }),
      chunk({ tool_calls: [{ index: 0, id: 'call_b', function: { name: 'b', arguments: '{"y":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '2}' } }] }),
    ]);
    expect(writer.calls.slice(1)).to.deep.equal([
      ['toolCallStart', 'call_a', 'a'],
      ['toolCallArguments', '{"x":1}'],
      ['toolCallEnd'],
      ['toolCallStart', 'call_b', 'b'],
      ['toolCallArguments', '{"y":'],
      ['toolCallArguments', '2}'],
    ]);
  });

  it('closes the text and opens the call when a tool call follows text', () => {
    const { writer } = run([
      chunk({ content: 'Let me check.' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } }] }),
      chunk({}, 'tool_calls'),
      DONE,
    ]);
    expect(methods(writer)).to.deep.equal(['start', 'text', 'toolCallStart', 'toolCallArguments', 'finish']);
    expect(writer.calls[2]).to.deep.equal(['toolCallStart', 'call_a', 'weather']);
  });

  it('leaves a call with no arguments to the writer, which fills in {}', () => {
    const { writer } = run([
      chunk({ tool_calls: [{ index: 0, id: 'call_now', type: 'function', function: { name: 'now' } }] }),
      chunk({}, 'tool_calls'),
      DONE,
    ]);
    expect(writer.calls).to.deep.equal([
      ['start'],
      ['toolCallStart', 'call_now', 'now'],
      ['finish', 'tool_use', { ...ZERO_COUNTS, source: 'partial' }],
    ]);
  });

  it('gives a tool call an id when the upstream sent none', () => {
    const { writer } = run([chunk({ tool_calls: [{ index: 0, function: { name: 'now', arguments: '' } }] })]);
    const [, id, name] = writer.calls[1];
    expect(name).to.equal('now');
    expect(id).to.match(/^call_[0-9a-f]{24}$/);
  });

  it('closes an open tool call before text that follows it', () => {
    const { writer } = run([
      chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '{}' } }] }),
      chunk({ content: 'done' }),
    ]);
    expect(methods(writer)).to.deep.equal(['start', 'toolCallStart', 'toolCallArguments', 'toolCallEnd', 'text']);
  });

  it('fails the stream when arguments arrive for a call that already ended (interleaved calls)', () => {
    const { reader, writer, outputs } = run([
      chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '{"x":' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', function: { name: 'b', arguments: '{}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
      chunk({}, 'tool_calls'),
      DONE,
    ]);
    expect(writer.calls.at(-1)?.slice(0, 2)).to.deep.equal(['fail', 'TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE']);
    expect(outputs.slice(3)).to.deep.equal(['', '']);
    expect(reader.ended).to.equal(true);
    expect(reader.upstreamError?.code).to.equal('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE');
  });

  it('relays reasoning_content as thinking before the answer text', () => {
    const { writer } = run([
      chunk({ role: 'assistant', reasoning_content: 'Think' }),
      chunk({ reasoning_content: 'ing.' }),
      chunk({ content: 'Answer' }),
      chunk({}, 'stop'),
      DONE,
    ]);
    expect(writer.calls.slice(0, 4)).to.deep.equal([['start'], ['thinking', 'Think'], ['thinking', 'ing.'], ['text', 'Answer']]);
  });

  it('maps the finish reason on [DONE]', () => {
    const cases: Array<[string, TurnStop]> = [
      ['stop', 'end'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
      ['function_call', 'tool_use'],
      ['content_filter', 'refusal'],
      ['something_new', 'end'],
    ];
    for (const [finishReason, stop] of cases) {
      const { writer } = run([chunk({ content: 'x' }, finishReason), DONE]);
      expect(writer.calls.at(-1)?.slice(0, 2), finishReason).to.deep.equal(['finish', stop]);
    }
  });

  it('relays a refusal as text and finishes as a refusal', () => {
    const { writer } = run([chunk({ refusal: 'I cannot help with that.' }), chunk({}, 'stop'), DONE]);
    expect(writer.calls.slice(1)).to.deep.equal([
      ['text', 'I cannot help with that.'],
      ['finish', 'refusal', { ...ZERO_COUNTS, source: 'partial' }],
    ]);
  });

  it('fails the stream on an error chunk mid-stream, keeping the upstream message, and ignores what follows', () => {
    const { reader, writer, outputs } = run([
      chunk({ content: 'Partial' }),
      frame({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } }),
      chunk({ content: 'more' }),
      DONE,
    ]);
    expect(writer.calls).to.deep.equal([
      ['start'],
      ['text', 'Partial'],
      ['fail', 'TOLLGATE_ERR_STREAM_INTERRUPTED', 'The server had an error while processing your request.'],
    ]);
    expect(outputs).to.deep.equal(['<start><text>', '<fail>', '', '']);
    expect(reader.ended).to.equal(true);
    expect(reader.upstreamError).to.be.instanceOf(GatewayError);
    expect(reader.upstreamError?.message).to.equal('The server had an error while processing your request.');
  });

  it('fails without starting when the very first chunk is an error', () => {
    const { reader, writer } = run([frame({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } })]);
    expect(writer.calls).to.deep.equal([['fail', 'TOLLGATE_ERR_STREAM_INTERRUPTED', 'Rate limit reached']]);
    expect(reader.ended).to.equal(true);
  });

  it('fails a stream whose [DONE] arrives without a finish reason: the answer was cut short', () => {
    const { reader, writer } = run([chunk({ content: 'Half an ans' }), DONE]);
    expect(methods(writer)).to.deep.equal(['start', 'text', 'fail']);
    expect(writer.calls[2][1]).to.equal('TOLLGATE_ERR_STREAM_INTERRUPTED');
    expect(reader.ended).to.equal(true);
    expect(reader.upstreamError?.code).to.equal('TOLLGATE_ERR_STREAM_INTERRUPTED');
  });

  it('fails the stream on a chunk that is not JSON', () => {
    const { reader, writer, outputs } = run([chunk({ content: 'ok' }), frame('{"choices": [ {"delta": '), chunk({ content: 'late' })]);
    expect(methods(writer)).to.deep.equal(['start', 'text', 'fail']);
    expect(writer.calls[2][1]).to.equal('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE');
    expect(outputs[2]).to.equal('');
    expect(reader.upstreamError?.code).to.equal('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE');
  });

  it('does not end before [DONE] even after the finish reason and usage', () => {
    const { reader } = run([chunk({}, 'stop'), usageChunk({ prompt_tokens: 1, completion_tokens: 1 })]);
    expect(reader.ended).to.equal(false);
    expect(reader.upstreamError).to.equal(null);
  });
});

describe('ChatStreamReader with the Messages writer', () => {
  it('produces a well-formed Messages stream whose message_delta carries the late usage', () => {
    const reader = new ChatStreamReader(new ToolNameMap(64));
    const writer = new MessagesStreamWriter({ id: 'msg_1', model: 'gpt-test' });
    const text = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Let me look.' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'now', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '"Paris"}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk({ prompt_tokens: 300, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 256 } }),
      DONE,
    ]
      .map((event) => reader.read(event, writer))
      .join('');
    const events = new SseParser().push(Buffer.from(text)).map((event) => JSON.parse(event.data) as Record<string, unknown>);
    expect(events.map((event) => event.type)).to.deep.equal([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[4]).to.deep.include({ index: 1, content_block: { type: 'tool_use', id: 'call_a', name: 'now', input: {} } });
    expect(events[10]).to.deep.equal({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 44, cache_creation_input_tokens: 0, cache_read_input_tokens: 256, output_tokens: 20 },
    });
  });
});

describe('readChatReply', () => {
  const toolNames = new ToolNameMap(64);

  function completion(message: Record<string, unknown>, finishReason: string, usage?: Record<string, unknown>) {
    return {
      id: 'chatcmpl-9',
      object: 'chat.completion',
      created: 1700000123,
      model: 'gpt-upstream',
      choices: [{ index: 0, message: { role: 'assistant', refusal: null, ...message }, logprobs: null, finish_reason: finishReason }],
      ...(usage !== undefined && { usage }),
    };
  }

  it('reads text, the client model id and split usage, leaving the id for the writer', () => {
    const body = completion({ content: 'Hello' }, 'stop', {
      prompt_tokens: 2000,
      completion_tokens: 12,
      total_tokens: 2012,
      prompt_tokens_details: { cached_tokens: 1536 },
    });
    expect(readChatReply(body, toolNames, 'gpt-test')).to.deep.equal({
      model: 'gpt-test',
      created: 1700000123,
      parts: [{ type: 'text', text: 'Hello' }],
      stop: 'end',
      usage: { inputTokens: 464, cacheReadTokens: 1536, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 12, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' },
    });
    expect(chatReplyHasUsage(body)).to.equal(true);
  });

  it('reads tool calls with the client names, after any text', () => {
    const names = new ToolNameMap(64);
    const clientName = 'mcp__server__a.tool';
    const body = completion(
      {
        content: 'Checking.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: names.upstream(clientName), arguments: '{"a":1}' } },
          { id: 'call_2', type: 'function', function: { name: 'now', arguments: '' } },
        ],
      },
      'tool_calls',
    );
    const turn = readChatReply(body, names, 'gpt-test');
    expect(turn.parts).to.deep.equal([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_call', id: 'call_1', name: clientName, arguments: '{"a":1}' },
      { type: 'tool_call', id: 'call_2', name: 'now', arguments: '' },
    ]);
    expect(turn.stop).to.equal('tool_use');
  });

  it('puts reasoning_content first as thinking with an empty signature', () => {
    const turn = readChatReply(completion({ content: 'Four.', reasoning_content: '2+2=4' }, 'stop'), toolNames, 'gpt-test');
    expect(turn.parts).to.deep.equal([
      { type: 'thinking', text: '2+2=4', signature: '' },
      { type: 'text', text: 'Four.' },
    ]);
  });

  it('maps finish reasons', () => {
    const cases: Array<[string, TurnStop]> = [
      ['stop', 'end'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
      ['function_call', 'tool_use'],
      ['content_filter', 'refusal'],
      ['other', 'end'],
    ];
    for (const [finishReason, stop] of cases) {
      expect(readChatReply(completion({ content: 'x' }, finishReason), toolNames, 'm').stop, finishReason).to.equal(stop);
    }
  });

  it('reads a refusal as its text with a refusal stop', () => {
    const turn = readChatReply(completion({ content: null, refusal: 'No.' }, 'stop'), toolNames, 'm');
    expect(turn.parts).to.deep.equal([{ type: 'text', text: 'No.' }]);
    expect(turn.stop).to.equal('refusal');
  });

  it('counts cache writes apart when the upstream reports them', () => {
    const body = completion({ content: 'x' }, 'stop', {
      prompt_tokens: 1000,
      completion_tokens: 5,
      prompt_tokens_details: { cached_tokens: 200, cache_write_tokens: 700 },
    });
    expect(readChatReply(body, toolNames, 'm').usage).to.deep.equal({
      inputTokens: 100,
      cacheReadTokens: 200,
      cacheWriteTokens: 700, cacheWrite1hTokens: 0,
      outputTokens: 5,
      imageInputTokens: 0,
      imageOutputTokens: 0,
      toolCalls: {},
      source: 'upstream',
    });
  });

  it('says when a reply carried no usage', () => {
    const body = completion({ content: 'x' }, 'stop');
    expect(chatReplyHasUsage(body)).to.equal(false);
    expect(readChatReply(body, toolNames, 'm').usage).to.deep.include(ZERO_COUNTS);
  });

  it('refuses a body that is not a chat completion', () => {
    for (const body of [{ object: 'response', output: [] }, null, 'text', { choices: [] }]) {
      expect(() => readChatReply(body, toolNames, 'm'), JSON.stringify(body))
        .to.throw(GatewayError)
        .with.property('code', 'TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE');
    }
  });
});
