import { expect } from 'chai';
import type { EndpointId, Usage } from '../../src/protocols/types';
import { replyUsage } from '../../src/protocols/reply-usage';
import { usageTapFor } from '../../src/protocols/usage-tap';

/** Feeds `text` in chunks of `size` bytes, so events are split at awkward places. */
function tapped(endpoint: EndpointId, text: string, size = 7): Usage | null {
  const tap = usageTapFor(endpoint);
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += size) tap.observe(bytes.subarray(at, at + size));
  return tap.result();
}

const CHAT_STREAM = [
  'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}',
  'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}',
  'data: {"id":"c","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129,"prompt_tokens_details":{"cached_tokens":100}}}',
  'data: [DONE]',
].join('\n\n') + '\n\n';

const MESSAGES_STREAM = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}}',
  'event: ping\ndata: {"type":"ping"}',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"usage"}}',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}',
  'event: message_stop\ndata: {"type":"message_stop"}',
].join('\r\n\r\n') + '\r\n\r\n';

describe('usage taps', () => {
  for (const size of [1, 3, 7, 4096]) {
    it(`reads the chat usage chunk, cached tokens taken out of the input (chunks of ${size})`, () => {
      expect(tapped('chat', CHAT_STREAM, size)).to.deep.equal({
        inputTokens: 20,
        cacheReadTokens: 100,
        cacheWriteTokens: 0, cacheWrite1hTokens: 0,
        outputTokens: 9,
        imageInputTokens: 0,
        imageOutputTokens: 0,
        toolCalls: {},
        source: 'upstream',
      });
    });

    it(`folds message_start and the cumulative message_delta of a Messages stream (chunks of ${size})`, () => {
      expect(tapped('messages', MESSAGES_STREAM, size)).to.deep.equal({
        inputTokens: 10,
        cacheWriteTokens: 200, cacheWrite1hTokens: 0,
        cacheReadTokens: 3000,
        outputTokens: 42,
        imageInputTokens: 0,
        imageOutputTokens: 0,
        toolCalls: {},
        source: 'upstream',
      });
    });
  }

  it('reports no usage for a chat stream without a usage chunk', () => {
    const stream = 'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n';
    expect(tapped('chat', stream)).to.equal(null);
  });

  it('reads usage from the terminal event of a Responses stream', () => {
    const stream =
      'event: response.created\ndata: {"type":"response.created","response":{"usage":null}}\n\n' +
      'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":20},"output_tokens":5}}}\n\n';
    expect(tapped('responses', stream)).to.deep.equal({
      inputTokens: 30,
      cacheReadTokens: 20,
      cacheWriteTokens: 0, cacheWrite1hTokens: 0,
      outputTokens: 5,
      imageInputTokens: 0,
      imageOutputTokens: 0,
      toolCalls: {},
      source: 'upstream',
    });
  });

  it('counts the image_generation partial images of a Responses stream as unreported until its usage comes, which replaces them', () => {
    const partial = (index: number, named: boolean) =>
      `${named ? 'event: response.image_generation_call.partial_image\n' : ''}data: {"type":"response.image_generation_call.partial_image","item_id":"ig_1","partial_image_index":${index},"partial_image_b64":"iVBORw0KGgo="}\n\n`;
    const cut = 'event: response.created\ndata: {"type":"response.created","response":{"usage":null}}\n\n' + partial(0, true) + partial(1, false);
    expect(tapped('responses', cut)).to.deep.include({ partialImages: 2, unreported: true, inputTokens: 0, imageOutputTokens: 0, source: 'partial' });
    const completed = cut + 'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":1},"tool_usage":{"image_gen":{"input_tokens":3,"output_tokens":1784}}}}\n\n';
    const usage = tapped('responses', completed);
    expect(usage).to.deep.include({ imageOutputTokens: 1784, source: 'upstream' });
    expect(usage).to.not.have.any.keys('partialImages', 'unreported');
  });

  it('tracks each image_generation call of a Responses stream before its usage: started, its partial images, finished', () => {
    const frame = (type: string, rest: string, named = true) => `${named ? `event: ${type}\n` : ''}data: {"type":"${type}",${rest}}\n\n`;
    const stream =
      frame('response.output_item.added', '"output_index":0,"item":{"type":"image_generation_call","id":"ig_1","status":"in_progress"}') +
      frame('response.image_generation_call.partial_image', '"item_id":"ig_1","partial_image_b64":"iVBORw0KGgo="') +
      frame('response.image_generation_call.completed', '"item_id":"ig_1"', false) +
      frame('response.image_generation_call.in_progress', '"item_id":"ig_2"') +
      frame('response.output_item.added', '"output_index":2,"item":{"type":"image_generation_call","id":"ig_3","status":"in_progress"}', false) +
      frame('response.output_item.done', '"output_index":2,"item":{"type":"image_generation_call","id":"ig_3","status":"completed","result":""}') +
      frame('response.output_item.added', '"output_index":3,"item":{"type":"message","id":"msg_1"}');
    expect(tapped('responses', stream)).to.deep.include({
      partialImages: 1,
      unreported: true,
      source: 'partial',
      imageCalls: { ig_1: { partials: 1, finished: true }, ig_2: { partials: 0, finished: false }, ig_3: { partials: 0, finished: true } },
    });
  });

  it('reads usage from plain bodies of each protocol', () => {
    expect(replyUsage('chat', JSON.parse('{"usage":{"prompt_tokens":5,"completion_tokens":2}}'))).to.include({ inputTokens: 5, outputTokens: 2 });
    expect(replyUsage('messages', JSON.parse('{"usage":{"input_tokens":5,"output_tokens":2}}'))).to.include({ inputTokens: 5, outputTokens: 2 });
    expect(replyUsage('responses', JSON.parse('{"usage":{"input_tokens":5,"output_tokens":2}}'))).to.include({ inputTokens: 5, outputTokens: 2 });
    expect(replyUsage('chat', JSON.parse('{"id":"no usage"}'))).to.equal(null);
  });

  it('reads usage with a negative, fractional, string or absurd count as unreadable, never as zero', () => {
    // Unreadable is null, so billing counts with its tokenizer (docs/faults.md#f14): a zero here would make
    // the answer free.
    for (const usage of [
      '{"prompt_tokens":-1000000,"completion_tokens":7}',
      '{"prompt_tokens":12,"completion_tokens":"7"}',
      '{"prompt_tokens":12,"completion_tokens":7.5}',
      '{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":1e300}}',
      '{"prompt_tokens":3000000000,"completion_tokens":7}',
    ]) {
      expect(replyUsage('chat', JSON.parse(`{"usage":${usage}}`)), usage).to.equal(null);
    }
    expect(replyUsage('chat', JSON.parse('{"usage":{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}'))).to.deep.include({
      inputTokens: 12,
      outputTokens: 7,
    });
    // In a stream, one unreadable report spoils the stream's usage for good.
    const stream =
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":"12","output_tokens":1}}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":30}}\n\n';
    expect(tapped('messages', stream)).to.equal(null);
  });

  it('splits 1-hour cache writes from 5-minute ones and counts server-tool calls', () => {
    const usage = {
      input_tokens: 5,
      cache_creation_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
      output_tokens: 2,
      server_tool_use: { web_search_requests: 4, web_fetch_requests: 0 },
    };
    expect(replyUsage('messages', { usage })).to.deep.include({ cacheWriteTokens: 10, cacheWrite1hTokens: 20, toolCalls: { web_search: 4 } });
    expect(replyUsage('messages', { usage: { input_tokens: 5, cache_creation_input_tokens: 30, output_tokens: 2 } })).to.deep.include({
      cacheWriteTokens: 30,
      cacheWrite1hTokens: 0,
    });
  });

  it('never finds usage on count_tokens, which is not billed', () => {
    expect(replyUsage('count_tokens', JSON.parse('{"input_tokens":12}'))).to.equal(null);
    expect(tapped('count_tokens', 'data: {"input_tokens":12}\n\n')).to.equal(null);
  });
});
