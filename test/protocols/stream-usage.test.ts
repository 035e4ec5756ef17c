/**
 * The remover of what asking for usage added to a chat stream: the same bytes come out however the
 * stream is chunked (a frame end split between chunks included), and a frame of many MiB costs one
 * pass, not a copy per chunk.
 */
import { expect } from 'chai';
import { UsageChunkRemover } from '../../src/protocols/openai-chat/stream-usage';

function relayed(stream: Buffer, sizes: (index: number) => number): string {
  const remover = new UsageChunkRemover();
  const out: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < stream.length; i++) {
    const size = Math.max(1, sizes(i));
    out.push(...remover.push(stream.subarray(at, at + size)));
    at += size;
  }
  out.push(remover.end());
  return Buffer.concat(out).toString('utf8');
}

const STREAM = [
  'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}\n\n',
  'data: {"id":"c","usage":null,"choices":[{"index":0,"delta":{"content":"hé\\n\\nllo"}}]}\n\n',
  ': keep-alive\n\n',
  'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
  'data: [DONE]\n\n',
].join('');

const EXPECTED = [
  'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
  'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hé\\n\\nllo"}}]}\n\n',
  ': keep-alive\n\n',
  'data: [DONE]\n\n',
].join('');

describe('UsageChunkRemover', () => {
  it('takes out the usage chunk and the "usage":null fields, whole or chunked at every size', () => {
    const stream = Buffer.from(STREAM);
    expect(relayed(stream, () => stream.length)).to.equal(EXPECTED);
    for (const size of [1, 2, 3, 5, 7, 16, 64]) expect(relayed(stream, () => size), `chunks of ${size}`).to.equal(EXPECTED);
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) % 23;
    for (let run = 0; run < 50; run++) expect(relayed(stream, random), `random chunks, run ${run}`).to.equal(EXPECTED);
  });

  it('relays an unfinished last frame as it came', () => {
    expect(relayed(Buffer.from('data: {"a":1}\n\ndata: {"b"'), () => 4)).to.equal('data: {"a":1}\n\ndata: {"b"');
  });

  it('passes a 16 MiB frame fed in 64 KiB chunks in time linear in its size', () => {
    const frame = (size: number) => Buffer.from(`data: {"id":"c","choices":[{"index":0,"delta":{"content":"${'x'.repeat(size)}"}}],"usage":null}\n\n`);
    const cpuFor = (size: number) => {
      const stream = frame(size);
      const started = process.cpuUsage();
      const out = relayed(stream, () => 64 * 1024);
      const spent = process.cpuUsage(started);
      expect(out.length).to.equal(stream.length - ',"usage":null'.length);
      return (spent.user + spent.system) / 1000;
    };
    cpuFor(1024 * 1024);
    const small = cpuFor(4 * 1024 * 1024);
    const large = cpuFor(16 * 1024 * 1024);
    // A copy of everything held per chunk (as before) took seconds here and grew sixteenfold.
    expect(large / Math.max(small, 20), `16 MiB: ${large.toFixed(0)} ms CPU, 4 MiB: ${small.toFixed(0)} ms`).to.be.below(8);
  });
});
