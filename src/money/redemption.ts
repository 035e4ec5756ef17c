/**
 * Whether a redemption code can be redeemed now, and for what: the one rule both stores apply to the
 * code's row, read under their lock, before they write its credit and claim it.
 */
import type { RedemptionCodeRecord } from '../store/store';

export type RedemptionVerdict =
  | { readonly ok: true; readonly codeId: string; readonly amount: bigint; readonly note: string }
  | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' };

/** Unknown, already used, expired at `now`, or worth its amount, credited with a note naming the code. */
export function redemptionVerdict(code: Pick<RedemptionCodeRecord, 'id' | 'amount' | 'redeemedAt' | 'expiresAt'> | null, now: Date): RedemptionVerdict {
  if (code === null) return { ok: false, reason: 'unknown' };
  if (code.redeemedAt !== null) return { ok: false, reason: 'used' };
  if (code.expiresAt !== null && code.expiresAt.getTime() <= now.getTime()) return { ok: false, reason: 'expired' };
  return { ok: true, codeId: code.id, amount: code.amount, note: `redemption code ${code.id}` };
}
