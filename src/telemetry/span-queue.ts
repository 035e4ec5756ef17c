/**
 * The span processor between finished spans and the exporter. A request's only cost is pushing its
 * spans onto a bounded queue; a timer sends batches, one export at a time. When the queue is full (a
 * collector that is slow or down) new spans are dropped and counted, never waited for: export can
 * neither slow nor fail a request. Written here rather than using the SDK's batch processor so the
 * drops are counted where an operator can alert on them.
 */
import type { Context } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

export type DropReason = 'queue_full' | 'export_failed';

export interface SpanQueueOptions {
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  readonly scheduledDelayMs: number;
  /** Told of every span not exported, and why. */
  readonly onDrop: (reason: DropReason, count: number) => void;
}

export class BoundedSpanQueue implements SpanProcessor {
  private queue: ReadableSpan[] = [];
  private exporting: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private stopped = false;
  private scheduled = false;

  constructor(
    private readonly exporter: SpanExporter,
    private readonly options: SpanQueueOptions,
  ) {
    this.timer = setInterval(() => void this.exportBatch(), options.scheduledDelayMs);
    // A pending export must never keep a stopping process alive.
    this.timer.unref();
  }

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopped) return;
    if (this.queue.length >= this.options.maxQueueSize) {
      this.options.onDrop('queue_full', 1);
      return;
    }
    this.queue.push(span);
    // A full batch goes out on the next turn of the event loop, not inside whatever ended the span.
    if (this.queue.length >= this.options.maxExportBatchSize && this.exporting === null && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.exportBatch();
      });
    }
  }

  /** Sends what is queued, batch after batch, until the queue is empty. */
  async forceFlush(): Promise<void> {
    while (this.queue.length > 0 || this.exporting !== null) {
      await (this.exporting ?? this.exportBatch());
    }
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.forceFlush();
    await this.exporter.shutdown();
  }

  /** Exports one batch unless one is already on its way (that one's end starts the next). */
  private exportBatch(): Promise<void> {
    if (this.exporting !== null) return this.exporting;
    if (this.queue.length === 0) return Promise.resolve();
    const batch = this.queue.splice(0, this.options.maxExportBatchSize);
    this.exporting = new Promise<void>((resolve) => {
      const done = (result: ExportResult) => {
        if (result.code !== ExportResultCode.SUCCESS) this.options.onDrop('export_failed', batch.length);
        resolve();
      };
      try {
        this.exporter.export(batch, done);
      } catch (error) {
        done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) });
      }
    }).then(() => {
      this.exporting = null;
      if (this.queue.length >= this.options.maxExportBatchSize) void this.exportBatch();
    });
    return this.exporting;
  }
}
