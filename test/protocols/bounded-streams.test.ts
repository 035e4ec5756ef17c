/**
 * Stream bookkeeping stays linear in time and bounded in memory (docs/limits.md): the SSE parser on one
 * huge event, and the native usage tap on a long stream, whose output is counted as it passes instead
 * of kept whole.
 */
import { expect } from 'chai';
import { OutputTokenCount } from '../../src/protocols/output-count';
import { SseEventTooLarge, SseParser } from '../../src/protocols/sse';
import { usageTapFor } from '../../src/protocols/usage-tap';
import { loopBlockDuring, memoryAfterGcMiB } from '../helpers/bounds';
import { slicedCount } from '../helpers/o200k';

const MIB = 1024 * 1024;

describe('bounded stream bookkeeping', function () {
  this.timeout(60_000);

  it('parses one 16 MiB event, fed in 64 KiB chunks, without a long block', async () => {
    const data = 'x'.repeat(16 * MIB);
    const bytes = Buffer.from(`event: big\ndata: ${data}\n\n`);
    const { result: events, maxBlockMs } = await loopBlockDuring(async () => {
      // One synchronous run, as a relay gets when many buffered chunks flow at once.
      await new Promise((resolve) => setImmediate(resolve));
      const parser = new SseParser();
      const out = [];
      for (let at = 0; at < bytes.length; at += 64 * 1024) out.push(...parser.push(bytes.subarray(at, at + 64 * 1024)));
      await new Promise((resolve) => setImmediate(resolve));
      return out;
    });
    expect(events).to.have.length(1);
    expect(events[0].event).to.equal('big');
    expect(events[0].data.length).to.equal(data.length);
    // Before: every chunk re-scanned all pending bytes, 12 s of CPU for this event; a linear scan takes
    // tens of ms on a quiet core, about a second on this shared machine under a full test run.
    expect(maxBlockMs, 'longest event-loop block (ms)').to.be.below(5000);
  });

  it('still splits CRLF, CR and LF line ends across chunk boundaries', () => {
    const text = 'event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n';
    for (let size = 1; size <= text.length; size++) {
      const parser = new SseParser();
      const events = [];
      const bytes = Buffer.from(text);
      for (let at = 0; at < bytes.length; at += size) events.push(...parser.push(bytes.subarray(at, at + size)));
      expect(events, `chunks of ${size}`).to.deep.equal([
        { event: 'a', data: '1' },
        { event: 'b', data: '2' },
        { event: null, data: '3' },
      ]);
      expect(parser.hasPartialEvent()).to.equal(false);
    }
  });

  it('refuses to hold an event larger than its cap', () => {
    const parser = new SseParser(1024);
    parser.push(Buffer.from(`data: ${'x'.repeat(1000)}`));
    expect(() => parser.push(Buffer.from('y'.repeat(100)))).to.throw(SseEventTooLarge);
  });

  it('counts output as a long native stream passes, holding none of it (48 MiB relayed)', async () => {
    const tap = usageTapFor('messages');
    const delta = (text: string) =>
      Buffer.from(`event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })}\n\n`);
    const words = 'the gateway counts these words as they pass and lets them go ';
    const chunkText = words.repeat(Math.floor((64 * 1024) / words.length));
    const before = memoryAfterGcMiB();
    let relayed = 0;
    let paced = 0;
    // Each chunk a fresh buffer, as from a socket: keeping references would keep them all. Like the
    // relays, the loop reads no further while the tap's count is behind (the tokenizer's worker).
    for (; relayed < 48 * MIB; ) {
      const chunk = delta(chunkText);
      relayed += chunk.length;
      tap.observe(chunk);
      const behind = tap.behind();
      if (behind !== null) (paced += 1), await behind;
    }
    const during = memoryAfterGcMiB();
    const tokens = await tap.outputTokens();
    // Before: every relayed chunk was kept until the end (+340 MiB for 300 MiB relayed).
    expect(during - before, 'memory held by the tap (MiB) after GC').to.be.below(16);
    const chunks = Math.round(relayed / delta(chunkText).length);
    expect(tokens).to.equal(slicedCount(chunkText.repeat(chunks)));
    // Read faster than the worker counts, the stream waited for it rather than queue 48 MiB there.
    expect(paced, 'waits for the count').to.be.above(0);
  });

  it('counts the same tokens whether the output comes in one event or split mid-word over many', async () => {
    const text = 'Counting words, split anywhere: extraordinarily long-winded sentences included. '.repeat(3000);
    const whole = new OutputTokenCount('chat');
    whole.add(JSON.stringify({ choices: [{ delta: { content: text } }] }));
    const split = new OutputTokenCount('chat');
    for (let at = 0; at < text.length; at += 7) split.add(JSON.stringify({ choices: [{ delta: { content: text.slice(at, at + 7) } }] }));
    split.add('[DONE]');
    expect(await split.total()).to.equal(await whole.total());
    expect(await whole.total()).to.equal(slicedCount(text));
  });

  it('counts an event of many hundred KiB in the tokenizer thread, the same tokens as its text', async () => {
    // Large enough to be parsed in the tokenizer's thread rather than on the event loop.
    const text = 'An image described at length, word after word. '.repeat(12_000);
    const count = new OutputTokenCount('chat');
    count.add(JSON.stringify({ choices: [{ delta: { content: 'Before it: ' } }] }));
    count.add(JSON.stringify({ choices: [{ delta: { content: text } }] }));
    count.add('[DONE]');
    expect(text.length).to.be.greaterThan(512 * 1024);
    expect(await count.total()).to.equal(slicedCount('Before it: ') + slicedCount(text));
  });
});
