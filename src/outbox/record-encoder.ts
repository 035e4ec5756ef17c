/**
 * Writes outbox records in the format `record-format.ts` describes: any record as JSON
 * (`encodeRecord`), and the compact CHARGE, PRICES and DRAINED records into one reused buffer
 * (`RecordEncoder`), the form the request path appends.
 */
import { crc32 } from 'node:zlib';
import type { ChargePrices, ChargeRecord } from '../store/store';
import {
  BIGINT_TAG,
  CHARGE,
  DATE_TAG,
  DRAINED,
  FIELD_COUNT,
  LONG_TEXT,
  NULL,
  PRESENT,
  PRICES,
  RECORD_HEADER_BYTES,
  UNDEFINED,
  type OutboxRecord,
} from './record-format';

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return { [BIGINT_TAG]: value.toString() };
  // JSON.stringify has already called Date#toJSON on `value`; the holder still has the Date itself.
  const original = this[key];
  if (original instanceof Date) return { [DATE_TAG]: original.getTime() };
  return value;
}

/** The record as bytes (JSON payload): header and payload in one buffer. */
export function encodeRecord(record: OutboxRecord): Buffer {
  const json = JSON.stringify(record, replacer);
  const length = Buffer.byteLength(json);
  const bytes = Buffer.allocUnsafe(RECORD_HEADER_BYTES + length);
  bytes.write(json, RECORD_HEADER_BYTES, 'utf8');
  const payload = bytes.subarray(RECORD_HEADER_BYTES);
  bytes.writeUInt32BE(length, 0);
  bytes.writeUInt32BE(crc32(payload), 4);
  return bytes;
}

/** A text this short has its length as its tag: the tags from UNDEFINED up mean something else. */
const SHORT_TEXT = UNDEFINED;
const INITIAL_SCRATCH = 16 * 1024;

/**
 * Encodes records into one reused buffer: what `charge` and `prices` return is valid until the next
 * call, so the caller copies it where it goes (the outbox's ring) and nothing is allocated per charge.
 */
export class RecordEncoder {
  private scratch = Buffer.allocUnsafe(INITIAL_SCRATCH);
  private at = 0;

  /** A CHARGE record; `pricesId` names the PRICES record of its snapshot (0 when it has none). */
  charge(charge: ChargeRecord, instance: string | null, pricesId: number): Buffer {
    this.at = RECORD_HEADER_BYTES;
    this.byte(CHARGE);
    this.text(instance);
    this.byte(FIELD_COUNT);
    this.text(charge.requestId);
    this.text(charge.clientRequestId);
    this.text(charge.accountId);
    this.text(charge.keyId);
    this.text(charge.model);
    this.text(charge.provider);
    this.text(charge.endpoint);
    this.number(charge.inputTokens);
    this.number(charge.cacheWriteTokens);
    this.number(charge.cacheWrite1hTokens);
    this.number(charge.cacheReadTokens);
    this.number(charge.outputTokens);
    this.calls(charge.toolCalls);
    this.bigint(charge.cost);
    this.bigint(charge.held);
    this.bigint(charge.overage);
    this.bigint(charge.unbilled);
    this.uint32(charge.prices === null ? 0 : pricesId);
    this.text(charge.usageSource);
    this.number(charge.status);
    this.text(charge.outcome);
    this.number(charge.latencyMs);
    this.number(charge.createdAt.getTime());
    this.text(charge.serviceTier);
    this.byte(charge.longContext ? 1 : 0);
    this.text(charge.sessionId);
    this.text(charge.requestedModel);
    this.text(charge.servedModel);
    this.attempts(charge.attempts);
    this.number(charge.ttfbMs);
    this.text(charge.userAgent);
    this.text(charge.origin);
    this.number(charge.imageInputTokens);
    this.number(charge.imageOutputTokens);
    this.number(charge.images);
    this.optionalBigint(charge.upstreamCost);
    this.text(charge.memberAccountId);
    return this.finish();
  }

  /** A PRICES record: the snapshot that CHARGE records of the same segment name by `id`. */
  prices(id: number, prices: ChargePrices): Buffer {
    this.at = RECORD_HEADER_BYTES;
    this.byte(PRICES);
    this.uint32(id);
    this.text(JSON.stringify(prices));
    return this.finish();
  }

  /** A DRAINED record: these request ids are in the store. */
  drained(ids: readonly string[]): Buffer {
    this.at = RECORD_HEADER_BYTES;
    this.byte(DRAINED);
    this.uint32(ids.length);
    for (const id of ids) this.text(id);
    return this.finish();
  }

  private finish(): Buffer {
    const length = this.at - RECORD_HEADER_BYTES;
    const record = this.scratch.subarray(0, this.at);
    record.writeUInt32BE(length, 0);
    record.writeUInt32BE(crc32(record.subarray(RECORD_HEADER_BYTES)), 4);
    return record;
  }

  private room(bytes: number): void {
    if (this.at + bytes <= this.scratch.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.at + bytes));
    this.scratch.copy(bigger, 0, 0, this.at);
    this.scratch = bigger;
  }

  private byte(value: number): void {
    this.room(1);
    this.scratch[this.at++] = value;
  }

  private text(value: string | null | undefined): void {
    if (value === null || value === undefined) return this.byte(value === null ? NULL : UNDEFINED);
    const chars = value.length;
    // At most 3 bytes per UTF-16 unit: room for the longest it can be, then the length it took.
    this.room(5 + chars * 3);
    const bytes = this.scratch;
    if (chars < SHORT_TEXT / 3) {
      // ASCII (ids, model names) is copied here; a call into Buffer#write costs more than the copy.
      let index = 0;
      for (; index < chars; index++) {
        const code = value.charCodeAt(index);
        if (code > 0x7f) break;
        bytes[this.at + 1 + index] = code;
      }
      const length = index === chars ? chars : bytes.write(value, this.at + 1, 'utf8');
      bytes[this.at] = length;
      this.at += 1 + length;
      return;
    }
    const length = bytes.write(value, this.at + 5, 'utf8');
    bytes[this.at] = LONG_TEXT;
    bytes.writeUInt32BE(length, this.at + 1);
    this.at += 5 + length;
  }

  private number(value: number | null | undefined): void {
    if (value === null || value === undefined) return this.byte(value === null ? NULL : UNDEFINED);
    this.room(9);
    this.scratch[this.at] = PRESENT;
    this.scratch.writeDoubleBE(value, this.at + 1);
    this.at += 9;
  }

  private uint32(value: number): void {
    this.room(4);
    this.scratch.writeUInt32BE(value, this.at);
    this.at += 4;
  }

  /** A double when it holds the value exactly (every amount short of 2^53), else its decimal text. */
  private optionalBigint(value: bigint | null | undefined): void {
    if (value === null || value === undefined) return this.byte(value === null ? NULL : UNDEFINED);
    this.bigint(value);
  }

  private bigint(value: bigint): void {
    const number = Number(value);
    if (Number.isSafeInteger(number)) return this.number(number);
    this.byte(LONG_TEXT);
    this.text(value.toString());
  }

  private calls(calls: ChargeRecord['toolCalls']): void {
    // The count goes first; it is known once the calls are written.
    const countAt = this.at;
    this.uint32(0);
    let count = 0;
    for (const name in calls) {
      this.text(name);
      this.number(calls[name]);
      count += 1;
    }
    this.scratch.writeUInt32BE(count, countAt);
  }

  private attempts(attempts: ChargeRecord['attempts']): void {
    if (attempts === undefined) return this.byte(UNDEFINED);
    this.byte(PRESENT);
    this.uint32(attempts.length);
    for (const attempt of attempts) {
      this.text(attempt.provider);
      this.text(attempt.outcome);
      this.number(attempt.ms);
    }
  }
}
