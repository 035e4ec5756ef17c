/**
 * What a translated stream keeps of its answer (src/protocols/held-output.ts): nothing of what it
 * only relays (a chat stream's content, a Messages text block's text: their lengths are counted
 * instead, for citations), and what the client's protocol repeats at its end only up to the bound,
 * past which the stream ends with its error event, having sent exactly what that event shows.
 */
import { expect } from 'chai';
import { GatewayError } from '../../src/kernel/errors';
import { CodePointCount } from '../../src/protocols/code-point-count';
import { HELD_OUTPUT_CHARS } from '../../src/protocols/held-output';
import { ChatStreamWriter } from '../../src/protocols/openai-chat/writer';
import { codePoints } from '../../src/protocols/openai-responses/items';
import { ResponsesStreamWriter } from '../../src/protocols/openai-responses/writer';
import { SseParser } from '../../src/protocols/sse';
import { MessagesStreamReader } from '../../src/translators/readers/messages-stream';
import { ToolNameMap } from '../../src/translators/tool-names';

type Payload = Record<string, unknown> & { type: string };

function payloads(frames: string): Payload[] {
  return new SseParser().push(Buffer.from(frames)).map((event) => JSON.parse(event.data) as Payload);
}

function expectCutShort(write: () => string): void {
  let thrown: unknown;
  try {
    write();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).to.be.instanceOf(GatewayError);
  expect((thrown as GatewayError).code).to.equal('TOLLGATE_ERR_STREAM_INTERRUPTED');
  expect((thrown as GatewayError).message).to.contain('holds to repeat at the end of a translated stream');
}

describe('held output: what a translated stream keeps, and its bound', () => {
  it('counts code points fragment by fragment as the joined text has them, a pair split across two included', () => {
    const text = 'a😀b\u{1F600}\u{1F601}c\ud800x\udc00é';
    for (let cut = 0; cut <= text.length; cut++) {
      for (let second = cut; second <= text.length; second++) {
        const count = new CodePointCount();
        for (const fragment of [text.slice(0, cut), text.slice(cut, second), text.slice(second)]) count.add(fragment);
        expect(count.total, `cut at ${cut} and ${second}`).to.equal(codePoints(text));
      }
    }
  });

  it('a Responses stream ends at the bound, its response.failed showing exactly the text it sent', () => {
    const writer = new ResponsesStreamWriter({ model: 'claude-test' });
    let sent = writer.start();
    const delta = 'x'.repeat(64 * 1024);
    let text = '';
    for (;;) {
      try {
        sent += writer.text(delta);
        text += delta;
      } catch (error) {
        expect((error as GatewayError).code).to.equal('TOLLGATE_ERR_STREAM_INTERRUPTED');
        sent += writer.fail(error as GatewayError);
        break;
      }
      expect(text.length, 'the bound was never reached').to.be.at.most(HELD_OUTPUT_CHARS);
    }
    expect(text.length).to.be.above(HELD_OUTPUT_CHARS - 2 * delta.length);
    const events = payloads(sent);
    const deltas = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta as string);
    expect(deltas.join('')).to.equal(text);
    const failed = events[events.length - 1] as Payload & { response: { output: Array<{ content: Array<{ text: string }> }> } };
    expect(failed.type).to.equal('response.failed');
    expect(failed.response.output[0].content[0].text).to.equal(text);
  });

  it('a Responses stream counts tool arguments, reasoning and signatures against the same bound', () => {
    const writer = new ResponsesStreamWriter({ model: 'claude-test' });
    writer.start();
    writer.thinking('t'.repeat(HELD_OUTPUT_CHARS / 2));
    writer.toolCallStart('call_1', 'write_file');
    expectCutShort(() => writer.toolCallArguments('a'.repeat(HELD_OUTPUT_CHARS / 2)));
    const other = new ResponsesStreamWriter({ model: 'claude-test' });
    other.start();
    other.thinking('t'.repeat(HELD_OUTPUT_CHARS - 1024));
    expectCutShort(() => other.thinkingSignature('s'.repeat(2048)));
  });

  it('a chat stream keeps none of its content, and one reasoning block at a time up to the bound', () => {
    const writer = new ChatStreamWriter({ model: 'claude-test', includeUsage: false });
    writer.start();
    // Content is only counted: far past the bound, and its citations still placed by code points.
    const chunk = 'é😀'.repeat(16 * 1024);
    for (let i = 0; i < Math.ceil((2 * HELD_OUTPUT_CHARS) / chunk.length); i++) writer.text(chunk);
    const written = Math.ceil((2 * HELD_OUTPUT_CHARS) / chunk.length) * codePoints(chunk);
    const [annotated] = payloads(writer.citations(10, [{ url: 'https://example.com/', title: 'Example' }])) as Array<
      Payload & { choices: Array<{ delta: { annotations: Array<{ url_citation: { start_index: number; end_index: number } }> } }> }
    >;
    expect(annotated.choices[0].delta.annotations[0].url_citation).to.deep.include({ start_index: written - 10, end_index: written });
    // A signed reasoning block is repeated whole: held, up to the bound, and let go at its signature.
    const half = 't'.repeat(HELD_OUTPUT_CHARS / 2 + 1);
    writer.thinking(half);
    writer.thinkingSignature('sig');
    writer.thinking(half);
    expectCutShort(() => writer.thinking(half));
  });

  it('a Messages reader keeps a text block by its length: its citations placed as before', () => {
    const reader = new MessagesStreamReader(new ToolNameMap(64));
    const writer = new ChatStreamWriter({ model: 'claude-test', includeUsage: false });
    const event = (data: object) => ({ event: (data as { type: string }).type, data: JSON.stringify(data) });
    reader.read(event({ type: 'message_start', message: { usage: { input_tokens: 1, output_tokens: 1 } } }), writer);
    reader.read(event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: 'Before. ' } }), writer);
    reader.read(event({ type: 'content_block_stop', index: 0 }), writer);
    reader.read(event({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '', citations: [] } }), writer);
    const citation = { type: 'web_search_result_location', url: 'https://example.com/', title: 'Example', cited_text: 'x', encrypted_index: 'e' };
    reader.read(event({ type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation } }), writer);
    for (const text of ['Cited 😀', ' claim.']) reader.read(event({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text } }), writer);
    const [annotated] = payloads(reader.read(event({ type: 'content_block_stop', index: 1 }), writer)) as Array<
      Payload & { choices: Array<{ delta: { annotations: Array<{ url_citation: { start_index: number; end_index: number } }> } }> }
    >;
    expect(annotated.choices[0].delta.annotations[0].url_citation).to.deep.include({ start_index: 8, end_index: 8 + codePoints('Cited 😀 claim.') });
  });
});
