/**
 * The tokenizer's worker thread: the counts it answers are the encoder's, it starts on the first count,
 * ends when idle, survives being killed, and a process whose worker cannot start still counts exactly.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { TokenCounter } from '../../src/billing/tokenizer';
import { encoderCount, slicedCount } from '../helpers/o200k';

const SAMPLES = [
  'Hello, world!',
  'The quick brown fox jumps over the lazy dog.',
  'Ünïcödé, 日本語のテキスト, 한국어, emoji 🎉🚀 and a flag 🇫🇷.',
  'function add(a: number, b: number): number {\n  return a + b;\n}\n',
  '   leading and trailing whitespace\t\r\n  ',
  'x'.repeat(900),
];

/** Single-spaced prose over many slices: cut before a space, its sliced count is the whole text's. */
const PROSE = 'Counting the words of a long answer, one slice at a time, changes nothing in the total. '.repeat(400);

/** About a second of counting: base64 is one long "word" of costly merges. */
function slowText(): string {
  return randomBytes(700_000).toString('base64');
}

function exited(worker: Worker, withinMs: number): Promise<unknown> {
  return Promise.race([once(worker, 'exit'), new Promise((_resolve, reject) => setTimeout(() => reject(new Error('the worker did not end')), withinMs))]);
}

describe('billing/tokenizer: the counting thread', function () {
  this.timeout(60_000);
  const counters: TokenCounter[] = [];
  const counter = (options?: ConstructorParameters<typeof TokenCounter>[0]) => {
    const made = new TokenCounter(options);
    counters.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.all(counters.splice(0).map((made) => made.stop()));
  });

  it("answers the encoder's counts, loaded in this thread for comparison", async () => {
    const tokens = counter();
    for (const text of SAMPLES) expect(await tokens.count(text), JSON.stringify(text.slice(0, 40))).to.equal(encoderCount(text));
    expect(await tokens.count(PROSE)).to.equal(encoderCount(PROSE));
    const random = slowText().slice(0, 20_000);
    expect(await tokens.count(random)).to.equal(slicedCount(random));
    expect(await tokens.count('')).to.equal(0);
  });

  it('starts no worker until the first count', async () => {
    const tokens = counter();
    expect(await tokens.count('')).to.equal(0);
    expect(tokens.thread).to.equal(null);
    const pending = tokens.count('now it starts');
    expect(tokens.thread).to.not.equal(null);
    expect(await pending).to.equal(encoderCount('now it starts'));
  });

  it('ends the worker after the idle period, and the next count starts another', async () => {
    const tokens = counter({ idleMs: 100 });
    expect(await tokens.count('first')).to.equal(encoderCount('first'));
    const first = tokens.thread!;
    await exited(first, 5_000);
    expect(tokens.thread).to.equal(null);
    expect(await tokens.count('second')).to.equal(encoderCount('second'));
    expect(tokens.thread).to.not.equal(null);
    expect(tokens.thread!.threadId).to.not.equal(first.threadId);
  });

  it('keeps the worker while counts keep coming within the idle period', async () => {
    const tokens = counter({ idleMs: 300 });
    await tokens.count('one');
    const worker = tokens.thread!;
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await tokens.count(`again ${i}`);
    }
    expect(tokens.thread).to.equal(worker);
  });

  it('settles a count whose worker was killed under it, on a new worker, with the right count', async () => {
    const tokens = counter();
    await tokens.count('loaded');
    const doomed = tokens.thread!;
    const text = slowText();
    const pending = tokens.count(text);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await doomed.terminate();
    expect(await pending).to.equal(slicedCount(text));
    expect(tokens.thread).to.not.equal(null);
    expect(tokens.thread!.threadId).to.not.equal(doomed.threadId);
  });

  it('starts a new worker for the next count after an idle one was killed', async () => {
    const tokens = counter();
    await tokens.count('loaded');
    const killed = tokens.thread!;
    await killed.terminate();
    expect(tokens.thread).to.equal(null);
    expect(await tokens.count('after the crash')).to.equal(encoderCount('after the crash'));
    expect(tokens.thread!.threadId).to.not.equal(killed.threadId);
  });

  it('matches concurrent answers to their texts', async () => {
    const tokens = counter();
    const texts = Array.from({ length: 60 }, (_, i) => `${'word '.repeat(i * 37)}${i % 7 === 0 ? PROSE : ''}#${i}`);
    // One slow text among them: the others are not answered in order of asking.
    texts.push(slowText().slice(0, 200_000));
    const counts = await Promise.all(texts.map((text) => tokens.count(text)));
    expect(counts).to.deep.equal(texts.map(slicedCount));
  });

  it('answers 0 at once for a count its caller no longer wants, and the worker drops it', async () => {
    const tokens = counter();
    await tokens.count('loaded');
    let gone = false;
    const startedAt = performance.now();
    const pending = tokens.count(slowText() + slowText(), () => gone);
    setTimeout(() => (gone = true), 50);
    expect(await pending).to.equal(0);
    expect(performance.now() - startedAt, 'ms until answered').to.be.below(1_000);
    // The worker stopped on it: a short count right after is not queued behind a second of work.
    const next = performance.now();
    expect(await tokens.count('still here')).to.equal(encoderCount('still here'));
    expect(performance.now() - next, 'ms for the next count').to.be.below(500);
  });

  it('counts in this thread, exactly, when the worker cannot start, and says so once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-tokenizer-'));
    const script = join(dir, 'broken.js');
    writeFileSync(script, "throw new Error('no encoder here');\n");
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const tokens = counter({ script });
      const counts = await Promise.all(SAMPLES.map((text) => tokens.count(text)));
      expect(counts).to.deep.equal(SAMPLES.map(encoderCount));
      // Later counts go straight to this thread: no worker is started any more.
      expect(await tokens.count(PROSE)).to.equal(encoderCount(PROSE));
      expect(tokens.thread).to.equal(null);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.message)).to.deep.equal([
        'the tokenizer worker thread could not start twice running; token counts now run in the main thread',
      ]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('stops: at once when idle, and after the pending counts otherwise', async () => {
    const tokens = counter();
    await tokens.count('loaded');
    const idle = tokens.thread!;
    const ended = exited(idle, 5_000);
    await tokens.stop();
    expect(tokens.thread).to.equal(null);
    await ended;

    const text = slowText().slice(0, 100_000);
    const pending = tokens.count(text);
    const busy = tokens.thread!;
    await tokens.stop();
    expect(tokens.thread, 'still counting').to.equal(busy);
    expect(await pending).to.equal(slicedCount(text));
    await exited(busy, 5_000);
    expect(tokens.thread).to.equal(null);
  });
});
