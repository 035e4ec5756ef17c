/**
 * `tollgate redeem-codes …`: make prepaid codes and list them. A code's text is printed once, by
 * `create`, after a header line, so a script takes the last N lines; the store keeps only its hash.
 */
import { formatUnits } from '../billing/money';
import { generateRedemptionCode, hashRedemptionCode } from '../billing/redemption';
import type { PaymentsStore, RedemptionCodeRecord } from '../store/payments-store';
import { parsePositiveAmount } from './amount';
import { UsageError } from './args';
import { printJson } from './json';
import { formatTable, formatTime } from './table';

const MAX_CODES_PER_RUN = 1000;
/** Ten years: longer is a typo, and codes that never expire are what leaving out the flag means. */
const MAX_EXPIRY_DAYS = 3650;
const DAY_MS = 86_400_000;

/** A whole number from `min` to `max`, or a one-line UsageError naming the flag. */
function parseWholeNumber(text: string, flag: string, min: number, max: number): number {
  const value = /^\d{1,7}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`invalid ${flag} "${text}": use a whole number from ${min} to ${max}`);
  return value;
}

/**
 * `redeem-codes create --amount A --count N [--expires-days D]`: prints a header, then N new codes worth
 * A each, one per line, and stores them only once `flushed` says the lines were written: a closed pipe
 * (`| head -1`) must never leave codes in the store whose texts nobody saw. Returns the codes and their
 * records, in the same order.
 */
export async function createRedemptionCodesCommand(
  store: PaymentsStore,
  input: { amount: string; count: string; expiresDays?: string; actor: string },
  out: (line: string) => void,
  now: Date = new Date(),
  flushed: () => Promise<void> = async () => {},
): Promise<{ codes: string[]; records: RedemptionCodeRecord[] }> {
  const amount = parsePositiveAmount(input.amount, 'amount');
  const count = parseWholeNumber(input.count, '--count', 1, MAX_CODES_PER_RUN);
  const expiresAt =
    input.expiresDays === undefined
      ? null
      : new Date(now.getTime() + parseWholeNumber(input.expiresDays, '--expires-days', 1, MAX_EXPIRY_DAYS) * DAY_MS);
  const codes = Array.from({ length: count }, generateRedemptionCode);
  const expiry = expiresAt === null ? 'never expiring' : `expiring ${formatTime(expiresAt)}`;
  out(`created ${count} redemption code${count === 1 ? '' : 's'} worth ${formatUnits(amount)} each, ${expiry}.`);
  out(`They are shown only this once; the last ${count} line${count === 1 ? '' : 's'} below:`);
  for (const code of codes) out(code);
  await flushed();
  const records = await store.createRedemptionCodes({
    hashes: codes.map(hashRedemptionCode),
    amount,
    createdBy: input.actor,
    expiresAt,
  });
  return { codes, records };
}

function codeStatus(code: RedemptionCodeRecord, now: number): string {
  if (code.redeemedAt !== null) return 'redeemed';
  if (code.expiresAt !== null && code.expiresAt.getTime() <= now) return 'expired';
  return 'open';
}

/** `redeem-codes list`: the newest codes (at most `limit`), never their text, which is not stored. */
export async function listRedemptionCodesCommand(
  store: PaymentsStore,
  out: (line: string) => void,
  now: Date = new Date(),
  limit = 100,
  json = false,
): Promise<RedemptionCodeRecord[]> {
  const codes = await store.listRedemptionCodes(limit);
  if (json) {
    printJson(codes.map((code) => ({ ...code, status: codeStatus(code, now.getTime()) })), out);
    return codes;
  }
  if (codes.length === 0) {
    out('no redemption codes');
    return codes;
  }
  const header = ['ID', 'AMOUNT', 'CREATED', 'BY', 'EXPIRES', 'STATUS', 'REDEEMED BY', 'REDEEMED AT'];
  const rows = codes.map((code) => [
    code.id,
    formatUnits(code.amount),
    formatTime(code.createdAt),
    code.createdBy ?? '-',
    code.expiresAt === null ? 'never' : formatTime(code.expiresAt),
    codeStatus(code, now.getTime()),
    code.redeemedBy ?? '-',
    code.redeemedAt === null ? '-' : formatTime(code.redeemedAt),
  ]);
  for (const line of formatTable([header, ...rows])) out(line);
  if (codes.length === limit) out(`(the newest ${limit} shown)`);
  return codes;
}
