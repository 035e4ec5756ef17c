import { expect } from 'chai';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { BoundedSpanQueue, type DropReason } from '../../src/telemetry/span-queue';

/** An exporter that holds each export until the test settles it. */
class HeldExporter implements SpanExporter {
  readonly batches: ReadableSpan[][] = [];
  private readonly pending: ((result: ExportResult) => void)[] = [];
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.batches.push(spans);
    this.pending.push(done);
  }
  settle(code: ExportResultCode): void {
    this.pending.shift()?.({ code });
  }
  async shutdown(): Promise<void> {}
}

const span = (name: string) => ({ name }) as unknown as ReadableSpan;

describe('telemetry/BoundedSpanQueue', () => {
  it('drops and counts spans past the queue bound without waiting, one export at a time', async () => {
    const exporter = new HeldExporter();
    const drops: [DropReason, number][] = [];
    const queue = new BoundedSpanQueue(exporter, { maxQueueSize: 3, maxExportBatchSize: 2, scheduledDelayMs: 60_000, onDrop: (reason, count) => drops.push([reason, count]) });
    queue.onEnd(span('a'));
    queue.onEnd(span('b')); // a full batch: exported on the next turn, the export held
    expect(exporter.batches).to.deep.equal([]);
    await new Promise((resolve) => setImmediate(resolve));
    for (const name of ['c', 'd', 'e', 'f']) queue.onEnd(span(name));
    expect(exporter.batches.map((batch) => batch.map((s) => s.name))).to.deep.equal([['a', 'b']]);
    expect(drops).to.deep.equal([['queue_full', 1]]);

    exporter.settle(ExportResultCode.FAILED);
    await new Promise((resolve) => setImmediate(resolve));
    expect(drops).to.deep.equal([['queue_full', 1], ['export_failed', 2]]);
    // The next full batch went out once the first export ended.
    expect(exporter.batches.map((batch) => batch.map((s) => s.name))).to.deep.equal([['a', 'b'], ['c', 'd']]);

    const flushed = queue.shutdown();
    exporter.settle(ExportResultCode.SUCCESS);
    await new Promise((resolve) => setImmediate(resolve));
    exporter.settle(ExportResultCode.SUCCESS);
    await flushed;
    expect(exporter.batches.map((batch) => batch.map((s) => s.name))).to.deep.equal([['a', 'b'], ['c', 'd'], ['e']]);
    queue.onEnd(span('late'));
    expect(exporter.batches).to.have.length(3);
  });
});
