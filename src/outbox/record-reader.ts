/**
 * Reads outbox records back (the format is in `record-format.ts`): a segment's bytes become its
 * records, each damaged or cut-short one reported with where it is, so the caller can skip it.
 */
import { crc32 } from 'node:zlib';
import type { ChargeAttempt, ChargePrices } from '../store/store';
import {
  BIGINT_TAG,
  CHARGE,
  DATE_TAG,
  DRAINED,
  FIELD_KINDS,
  FIELD_NAMES,
  JSON_START,
  LONG_TEXT,
  MAX_PAYLOAD_BYTES,
  NULL,
  PRICES,
  RECORD_HEADER_BYTES,
  UNDEFINED,
  type OutboxRecord,
} from './record-format';

function reviver(_key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const tagged = value as Record<string, unknown>;
  if (typeof tagged[BIGINT_TAG] === 'string' && Object.keys(tagged).length === 1) return BigInt(tagged[BIGINT_TAG]);
  if (typeof tagged[DATE_TAG] === 'number' && Object.keys(tagged).length === 1) return new Date(tagged[DATE_TAG]);
  return value;
}

/** One record read back, or why the bytes at `offset` are not one. */
export type ReadResult =
  | { readonly ok: true; readonly offset: number; readonly bytes: number; readonly record: OutboxRecord }
  | { readonly ok: false; readonly offset: number; readonly reason: string; readonly resumeAt: number | null };

/**
 * Reads every record of a segment. A record whose checksum or payload fails is reported with where to
 * resume (after it: its length was plausible); a header or payload that runs past the end is a torn
 * tail, reported with `resumeAt` null, and reading stops there. PRICES records are read into the
 * segment's snapshots, not given out.
 */
export function* readRecords(data: Buffer): Generator<ReadResult> {
  const prices = new Map<number, ChargePrices>();
  let offset = 0;
  while (offset < data.length) {
    if (data.length - offset < RECORD_HEADER_BYTES) {
      yield { ok: false, offset, reason: `a record header cut short (${data.length - offset} of ${RECORD_HEADER_BYTES} bytes)`, resumeAt: null };
      return;
    }
    const length = data.readUInt32BE(offset);
    const end = offset + RECORD_HEADER_BYTES + length;
    if (length === 0 || length > MAX_PAYLOAD_BYTES) {
      yield { ok: false, offset, reason: `a record header with an impossible length (${length})`, resumeAt: null };
      return;
    }
    if (end > data.length) {
      yield { ok: false, offset, reason: `a record cut short (${data.length - offset - RECORD_HEADER_BYTES} of ${length} payload bytes)`, resumeAt: null };
      return;
    }
    const payload = data.subarray(offset + RECORD_HEADER_BYTES, end);
    const decoded = crc32(payload) === data.readUInt32BE(offset + 4) ? decodePayload(payload, prices) : 'its checksum does not match';
    if (typeof decoded === 'string') yield { ok: false, offset, reason: `a damaged record: ${decoded}`, resumeAt: end };
    else if (decoded !== null) yield { ok: true, offset, bytes: end - offset, record: decoded };
    offset = end;
  }
}

/** The record, null for a PRICES record (kept in `prices`), or why it is not one. */
function decodePayload(payload: Buffer, prices: Map<number, ChargePrices>): OutboxRecord | null | string {
  if (payload[0] === JSON_START) return decodeJson(payload);
  try {
    const reader = new Reader(payload, 1);
    if (payload[0] === PRICES) {
      const id = reader.uint32();
      prices.set(id, reader.json() as ChargePrices);
      return null;
    }
    if (payload[0] === CHARGE) return decodeCharge(reader, prices);
    if (payload[0] === DRAINED) {
      const ids: string[] = [];
      for (let count = reader.uint32(); count > 0; count--) ids.push(reader.text() ?? '');
      return { kind: 'drained', id: '', instance: null, row: { ids } };
    }
  } catch (error) {
    return `its payload cannot be read (${(error as Error).message})`;
  }
  return `its payload has an unknown type (${payload[0]})`;
}

function decodeCharge(reader: Reader, prices: ReadonlyMap<number, ChargePrices>): OutboxRecord {
  const instance = reader.text() ?? null;
  const count = reader.byte();
  const row: Record<string, unknown> = {};
  for (let index = 0; index < count; index++) {
    const kind = FIELD_KINDS[index];
    if (kind === undefined) throw new Error(`${count} fields, more than this version knows`);
    let value: unknown;
    switch (kind) {
      case 'text':
        value = reader.text();
        break;
      case 'number':
        value = reader.number();
        break;
      case 'bigint':
        value = reader.bigint();
        break;
      case 'optional-bigint':
        value = reader.optionalBigint();
        break;
      case 'calls':
        value = reader.calls();
        break;
      case 'attempts':
        value = reader.attempts();
        break;
      case 'date':
        value = new Date(reader.number() as number);
        break;
      case 'boolean':
        value = reader.byte() === 1;
        break;
      case 'prices': {
        const id = reader.uint32();
        value = id === 0 ? null : prices.get(id);
        if (value === undefined) throw new Error(`price snapshot ${id} is not in this segment`);
        break;
      }
    }
    if (value !== undefined) row[FIELD_NAMES[index]] = value;
  }
  if (!reader.done) throw new Error('bytes left after the last field');
  // A record written before image tokens were counted has none.
  row.imageInputTokens ??= 0;
  row.imageOutputTokens ??= 0;
  const id = row.requestId;
  if (typeof id !== 'string') throw new Error('a charge without a request id');
  return { kind: 'charge', id, instance, row };
}

class Reader {
  constructor(
    private readonly bytes: Buffer,
    private at: number,
  ) {}

  get done(): boolean {
    return this.at === this.bytes.length;
  }

  byte(): number {
    if (this.at >= this.bytes.length) throw new Error('it ends inside a field');
    return this.bytes[this.at++];
  }

  uint32(): number {
    const value = this.bytes.readUInt32BE(this.at);
    this.at += 4;
    return value;
  }

  text(): string | null | undefined {
    const tag = this.byte();
    if (tag === NULL) return null;
    if (tag === UNDEFINED) return undefined;
    const length = tag === LONG_TEXT ? this.uint32() : tag;
    if (this.at + length > this.bytes.length) throw new Error('a text runs past the end');
    const value = this.bytes.toString('utf8', this.at, this.at + length);
    this.at += length;
    return value;
  }

  number(): number | null | undefined {
    const tag = this.byte();
    if (tag === NULL) return null;
    if (tag === UNDEFINED) return undefined;
    const value = this.bytes.readDoubleBE(this.at);
    this.at += 8;
    return value;
  }

  optionalBigint(): bigint | null | undefined {
    const tag = this.bytes[this.at];
    if (tag === NULL || tag === UNDEFINED) {
      this.at += 1;
      return tag === NULL ? null : undefined;
    }
    return this.bigint();
  }

  bigint(): bigint {
    if (this.bytes[this.at] === LONG_TEXT) {
      this.at += 1;
      return BigInt(this.text() ?? '');
    }
    return BigInt(this.number() ?? 0);
  }

  calls(): Record<string, number> {
    const calls: Record<string, number> = {};
    for (let count = this.uint32(); count > 0; count--) {
      const name = this.text() ?? '';
      calls[name] = this.number() ?? 0;
    }
    return calls;
  }

  attempts(): ChargeAttempt[] | undefined {
    if (this.byte() === UNDEFINED) return undefined;
    const attempts: ChargeAttempt[] = [];
    for (let count = this.uint32(); count > 0; count--) attempts.push({ provider: this.text() ?? '', outcome: this.text() ?? '', ms: this.number() ?? 0 });
    return attempts;
  }

  json(): unknown {
    return JSON.parse(this.text() ?? '');
  }
}

function decodeJson(payload: Buffer): OutboxRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'), reviver);
  } catch (error) {
    return `its payload is not JSON (${(error as Error).message})`;
  }
  const record = value as Partial<OutboxRecord> | null;
  if (typeof record !== 'object' || record === null || typeof record.kind !== 'string' || typeof record.id !== 'string' || typeof record.row !== 'object' || record.row === null) {
    return 'its payload is not an outbox record';
  }
  return { kind: record.kind, id: record.id, instance: typeof record.instance === 'string' ? record.instance : null, row: record.row };
}
