/**
 * The outbox's record format: an 8-byte header (payload length and the payload's CRC-32, both
 * big-endian 32-bit) and a payload whose first byte says what it is:
 * - `{`: a JSON record, whatever its row (bigints and Dates tagged so they come back as what they
 *   were): the drained lists, and any ledger write that is not a charge.
 * - CHARGE: a charge in a short binary form: the instance, a field count, then the columns in the
 *   fixed order of CHARGE_FIELDS, no key names. Its price snapshot is a number naming a PRICES record
 *   earlier in the same segment, since thousands of charges share one price table. A column added to
 *   charges does not compile until it is added here, at the end: older records, with fewer fields,
 *   still read, the new column undefined.
 * - PRICES: a price snapshot's number and its JSON.
 * - DRAINED: the request ids the store has confirmed (read back as a `drained` record).
 *
 * A record cut short (a crash in the middle of a write, a full disk) or damaged fails its checksum;
 * `readRecords` says where, so the caller can skip it and name the offset.
 */
import { crc32 } from 'node:zlib';
import type { ChargeAttempt, ChargePrices, ChargeRecord } from '../store/store';

const RECORD_HEADER_BYTES = 8;
/** No ledger row comes near this; a larger length is a damaged header, not a record. */
const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

/** What one outbox record holds: a ledger write the store has not confirmed yet. */
export interface OutboxRecord {
  /** Which ledger write it is (`charge`: a settled request's charge row; `drained`: see `outbox.ts`). */
  readonly kind: string;
  /** The write's own id in the store (a charge's request id): what a replay is checked against. */
  readonly id: string;
  /** The balance book instance whose live numbers already took it (Redis), or null. */
  readonly instance: string | null;
  /** The row as the store would be handed it. */
  readonly row: object;
}

const BIGINT_TAG = '$bigint';
const DATE_TAG = '$date';

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return { [BIGINT_TAG]: value.toString() };
  // JSON.stringify has already called Date#toJSON on `value`; the holder still has the Date itself.
  const original = this[key];
  if (original instanceof Date) return { [DATE_TAG]: original.getTime() };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const tagged = value as Record<string, unknown>;
  if (typeof tagged[BIGINT_TAG] === 'string' && Object.keys(tagged).length === 1) return BigInt(tagged[BIGINT_TAG]);
  if (typeof tagged[DATE_TAG] === 'number' && Object.keys(tagged).length === 1) return new Date(tagged[DATE_TAG]);
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

const CHARGE = 0x01;
const PRICES = 0x02;
const DRAINED = 0x03;
const JSON_START = 0x7b;

type FieldKind = 'text' | 'number' | 'bigint' | 'date' | 'boolean' | 'calls' | 'attempts' | 'prices';

/**
 * Every column of a charge, in the order a CHARGE record holds them; new ones go at the end, here and
 * in `RecordEncoder#charge` (written out field by field: a loop over names costs more than the rest).
 */
const CHARGE_FIELDS = {
  requestId: 'text',
  clientRequestId: 'text',
  accountId: 'text',
  keyId: 'text',
  model: 'text',
  provider: 'text',
  endpoint: 'text',
  inputTokens: 'number',
  cacheWriteTokens: 'number',
  cacheWrite1hTokens: 'number',
  cacheReadTokens: 'number',
  outputTokens: 'number',
  toolCalls: 'calls',
  cost: 'bigint',
  held: 'bigint',
  overage: 'bigint',
  unbilled: 'bigint',
  prices: 'prices',
  usageSource: 'text',
  status: 'number',
  outcome: 'text',
  latencyMs: 'number',
  createdAt: 'date',
  serviceTier: 'text',
  longContext: 'boolean',
  sessionId: 'text',
  requestedModel: 'text',
  servedModel: 'text',
  attempts: 'attempts',
  ttfbMs: 'number',
  userAgent: 'text',
  origin: 'text',
  imageInputTokens: 'number',
  imageOutputTokens: 'number',
  images: 'number',
} as const satisfies { readonly [K in keyof Required<ChargeRecord>]: FieldKind };

const FIELD_NAMES = Object.keys(CHARGE_FIELDS) as (keyof ChargeRecord)[];
const FIELD_KINDS = FIELD_NAMES.map((name) => CHARGE_FIELDS[name]);
const FIELD_COUNT = FIELD_NAMES.length;

/** Value tags: a present value has none (text: its length below SHORT_TEXT). */
const UNDEFINED = 0xfd;
const NULL = 0xfe;
const LONG_TEXT = 0xff;
const SHORT_TEXT = UNDEFINED;
const PRESENT = 0;
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
