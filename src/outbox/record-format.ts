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
 * `readRecords` (`record-reader.ts`) says where, so the caller can skip it and name the offset.
 * Records are written by `record-encoder.ts`.
 */
import type { ChargeRecord } from '../store/store';

export const RECORD_HEADER_BYTES = 8;
/** No ledger row comes near this; a larger length is a damaged header, not a record. */
export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

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

export const BIGINT_TAG = '$bigint';
export const DATE_TAG = '$date';

export const CHARGE = 0x01;
export const PRICES = 0x02;
export const DRAINED = 0x03;
export const JSON_START = 0x7b;

type FieldKind = 'text' | 'number' | 'bigint' | 'optional-bigint' | 'date' | 'boolean' | 'calls' | 'attempts' | 'prices';

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
  upstreamCost: 'optional-bigint',
  memberAccountId: 'text',
} as const satisfies { readonly [K in keyof Required<ChargeRecord>]: FieldKind };

export const FIELD_NAMES = Object.keys(CHARGE_FIELDS) as (keyof ChargeRecord)[];
export const FIELD_KINDS = FIELD_NAMES.map((name) => CHARGE_FIELDS[name]);
export const FIELD_COUNT = FIELD_NAMES.length;

/** Value tags: a present value has none (text: its length, when below UNDEFINED). */
export const UNDEFINED = 0xfd;
export const NULL = 0xfe;
export const LONG_TEXT = 0xff;
export const PRESENT = 0;
