/**
 * The outbox's record format: an 8-byte header (payload length and the payload's CRC-32, both
 * big-endian 32-bit) and a JSON payload. The payload carries a ledger row whole, whatever its
 * columns: bigints and Dates are tagged so they come back as what they were, and a column added to
 * a row later needs no change here.
 *
 * A record cut short (a crash in the middle of a write, a full disk) or damaged fails its checksum;
 * `readRecords` says where, so the caller can skip it and name the offset.
 */
import { crc32 } from 'node:zlib';

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

/** The record as bytes: header and payload in one buffer. */
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

/** One record read back, or why the bytes at `offset` are not one. */
export type ReadResult =
  | { readonly ok: true; readonly offset: number; readonly bytes: number; readonly record: OutboxRecord }
  | { readonly ok: false; readonly offset: number; readonly reason: string; readonly resumeAt: number | null };

/**
 * Reads every record of a segment. A record whose checksum or JSON fails is reported with where to
 * resume (after it: its length was plausible); a header or payload that runs past the end is a torn
 * tail, reported with `resumeAt` null, and reading stops there.
 */
export function* readRecords(data: Buffer): Generator<ReadResult> {
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
    const decoded = crc32(payload) === data.readUInt32BE(offset + 4) ? decodePayload(payload) : 'its checksum does not match';
    if (typeof decoded === 'string') yield { ok: false, offset, reason: `a damaged record: ${decoded}`, resumeAt: end };
    else yield { ok: true, offset, bytes: end - offset, record: decoded };
    offset = end;
  }
}

function decodePayload(payload: Buffer): OutboxRecord | string {
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
