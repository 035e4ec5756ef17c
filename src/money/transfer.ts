/**
 * Moving credit between two accounts (a person's own and an organisation's they may move money for):
 * the rule that decides whether a transfer may go. It is admission's balance rule (admission.ts),
 * applied to the source account: the amount must fit in what the source has available now, its
 * balance less what requests under way hold and less charges not yet written to the ledger. So a
 * transfer never takes an account below zero, and never takes what a running request was promised.
 * Each balance book reads the source's figure in the same atomic step that writes the transfer (its
 * lock, transaction or script) and asks this rule; the destination needs no check, it only gains.
 */
import { admit } from './admission';

export type TransferAdmission = { readonly ok: true } | { readonly ok: false; readonly reason: 'balance'; readonly available: bigint };

/** Why a transfer is malformed before any balance is read; null when it is well formed. */
export function transferShapeError(from: string, to: string, amount: bigint): string | null {
  if (from === to) return 'a transfer moves credit between two different accounts';
  if (amount <= 0n) return 'a transfer moves a positive amount';
  return null;
}

/** Whether `amount` may leave an account that has `balanceLeft` available (balance less holds and unwritten charges). */
export function admitTransfer(amount: bigint, balanceLeft: bigint): TransferAdmission {
  const admission = admit(amount, { balanceLeft, keyLeft: null, budgets: [] });
  if (admission.ok) return admission;
  if (admission.reason !== 'balance') throw new Error(`a transfer is refused on the balance only, not on ${admission.reason}`);
  return { ok: false, reason: 'balance', available: admission.available };
}
