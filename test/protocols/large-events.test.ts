/**
 * Events and bodies of many MiB (images in base64) kept as the bytes they came in: searched across
 * their pieces, handed to the tokenizer's thread as bytes, and read there into the same usage the
 * event-loop readers give for a small one, in stream order.
 */
import { expect } from 'chai';
import { stopTokenizer } from '../../src/billing/tokenizer';
import { indexIn, sliceOf } from '../../src/protocols/byte-pieces';
import { readLarge } from '../../src/protocols/large-json';
import { UsageChunkRemover } from '../../src/protocols/openai-chat/stream-usage';
import { SseParser, type SseEvent } from '../../src/protocols/sse';
import type { EndpointId, Usage } from '../../src/protocols/types';
import { usageTapFor } from '../../src/protocols/usage-tap';

const KiB = 1024;

/** A deterministic pseudo-random generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `bytes` cut into pieces of 1 to `max` bytes. */
function cut(bytes: Buffer, next: () => number, max: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = 1 + Math.floor(next() * max);
    pieces.push(bytes.subarray(at, at + size));
    at += size;
  }
  return pieces;
}

/** Base64-like text of `chars` characters. */
const image = (chars: number) => 'QUJD'.repeat(Math.ceil(chars / 4)).slice(0, chars);

describe('bytes in pieces', () => {
  it('finds the first and the last occurrence across pieces as in the joined bytes, and slices them alike', () => {
    const next = random(7);
    for (let round = 0; round < 5000; round++) {
      const text = Array.from({ length: Math.floor(next() * 60) }, () => 'ab,"u'[Math.floor(next() * 5)]).join('');
      const whole = Buffer.from(text);
      const pieces = cut(whole, next, 6);
      const needle = Buffer.from(['ab', 'a', '"u', 'b,"', 'abab'][round % 5]);
      expect(indexIn(pieces, needle), `${text} ${needle.toString()}`).to.equal(whole.indexOf(needle));
      expect(indexIn(pieces, needle, true), `${text} ${needle.toString()} last`).to.equal(whole.lastIndexOf(needle));
      const start = Math.floor(next() * (text.length + 1));
      const end = start + Math.floor(next() * (text.length - start + 1));
      expect(Buffer.concat(sliceOf(pieces, start, end)).toString()).to.equal(text.slice(start, end));
    }
  });
});

describe('SseParser with raw lines', () => {
  const data = JSON.stringify({ type: 'image_generation.partial_image', b64_json: image(300 * KiB) });

  for (const [name, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ] as const) {
    it(`hands a long data line on as its bytes and decodes the rest (${name}, cut anywhere)`, () => {
      const stream = Buffer.from(
        [`event: first${eol}data: {"a":1}`, `event: image${eol}data: ${data}`, `data:${data}${eol}data: tail`, `event: last${eol}data: {"b":2}`].join(eol + eol) + eol + eol,
      );
      for (const max of [7, 4096, 70 * KiB, stream.length]) {
        const parser = new SseParser(undefined, 256 * KiB);
        const events: SseEvent[] = [];
        for (const piece of cut(stream, random(max), max)) events.push(...parser.push(piece));
        expect(events.map((e) => [e.event, e.data, e.raw === undefined ? null : Buffer.concat(e.raw).toString()])).to.deep.equal([
          ['first', '{"a":1}', null],
          ['image', '', data],
          [null, '', `${data}\ntail`],
          ['last', '{"b":2}', null],
        ]);
        expect(parser.hasPartialEvent()).to.equal(false);
      }
    });
  }

  it('decodes every line when raw lines are not asked for', () => {
    const parser = new SseParser();
    const [event] = parser.push(Buffer.from(`event: image\ndata: ${data}\n\n`));
    expect(event).to.deep.equal({ event: 'image', data });
  });
});

describe('UsageChunkRemover on a large frame in pieces', () => {
  it('sends what it sends for the frame whole, without joining it', () => {
    const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content } }], usage: null })}\n\n`;
    const usage = `data: ${JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } })}\n\n`;
    const stream = Buffer.from(chunk('') + chunk(image(200 * KiB)) + usage + 'data: [DONE]\n\n');
    const whole = Buffer.concat(new UsageChunkRemover().push(stream));
    expect(whole.toString()).to.equal(chunk('').replace(',"usage":null', '') + chunk(image(200 * KiB)).replace(',"usage":null', '') + 'data: [DONE]\n\n');
    for (const max of [3, 1000, 64 * KiB]) {
      const remover = new UsageChunkRemover();
      const out = cut(stream, random(max), max).flatMap((piece) => remover.push(piece));
      expect(Buffer.concat([...out, remover.end()]).equals(whole), `pieces of up to ${max}`).to.equal(true);
    }
  });
});

describe('a large event read in the tokenizer thread', () => {
  after(() => stopTokenizer());

  /** Feeds `text` in chunks of `size`, then waits until every event is read; the usage and the reply id. */
  async function tapped(endpoint: EndpointId, text: string, size: number): Promise<{ usage: Usage | null; id: string | null }> {
    const tap = usageTapFor(endpoint);
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += size) tap.observe(bytes.subarray(at, at + size));
    await tap.settled?.();
    return { usage: tap.result(), id: tap.replyId?.() ?? null };
  }

  const frame = (event: string | null, data: unknown) => `${event === null ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

  function responsesStream(result: string): string {
    const usage = { input_tokens: 50, input_tokens_details: { cached_tokens: 10 }, output_tokens: 4000, total_tokens: 4050 };
    return (
      frame('response.created', { type: 'response.created', response: { id: 'resp_big', status: 'in_progress' } }) +
      frame('response.image_generation_call.partial_image', { type: 'response.image_generation_call.partial_image', partial_image_b64: result }) +
      frame('response.completed', {
        type: 'response.completed',
        response: { id: 'resp_big', status: 'completed', service_tier: 'default', output: [{ type: 'image_generation_call', id: 'ig', result }], usage },
      })
    );
  }

  it('reads the usage of a Responses stream whose terminal event carries a 1 MiB image as it reads a small one', async () => {
    const small = await tapped('responses', responsesStream('AAAA'), 4096);
    const large = await tapped('responses', responsesStream(image(1024 * KiB)), 64 * KiB);
    expect(small.usage).to.deep.include({ inputTokens: 40, cacheReadTokens: 10, outputTokens: 4000, toolCalls: { image_generation: 1 } });
    expect(large).to.deep.equal(small);
  });

  it('folds a Messages stream in order around a large delta', async () => {
    const stream =
      frame('message_start', { type: 'message_start', message: { id: 'm', usage: { input_tokens: 10, output_tokens: 1 } } }) +
      frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: image(512 * KiB) } }) +
      frame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 42 } }) +
      frame('message_stop', { type: 'message_stop' });
    const { usage } = await tapped('messages', stream, 64 * KiB);
    expect(usage).to.deep.include({ inputTokens: 10, outputTokens: 42 });
  });

  it('spoils the usage of a stream whose large event mentions usage but is not JSON', async () => {
    const garbled = `{"choices":[{"delta":{"content":"${image(300 * KiB)}"}}],"usage":{"prompt_tokens":1`;
    const stream = frame(null, garbled) + frame(null, { id: 'c', choices: [], usage: { prompt_tokens: 5, completion_tokens: 7 } });
    expect((await tapped('chat', stream, 64 * KiB)).usage).to.equal(null);
  });

  it('reads a whole reply to a skeleton that keeps its usage and drops its long strings', () => {
    const body = { id: 'c', choices: [{ index: 0, message: { role: 'assistant', content: image(4096) } }], usage: { prompt_tokens: 5, completion_tokens: 7 } };
    const { facts, outputText } = readLarge(JSON.stringify(body), 'chat', 'reply');
    expect(JSON.parse(facts.skeleton!)).to.deep.equal({ ...body, choices: [{ index: 0, message: { role: 'assistant', content: '' } }] });
    expect(outputText).to.equal(image(4096));
    expect(readLarge('{"usage":{"prompt_tokens":1', 'chat', 'reply').facts).to.deep.equal({ skeleton: null, mentionsUsage: true });
  });
});
