/**
 * Admission: whether a request's hold fits the limits on its money, and which limit refuses it when it
 * does not. One rule for every balance book; each book only reads the figures below atomically (its
 * lock, transaction or script) and writes the hold when the rule admits it.
 *
 * The limits are checked in one order, and the first one the hold does not fit is the refusal's reason:
 *   1. the account's balance (less what is held and what is charged but not yet in the store);
 *   2. the key's spend limit (less what the key spent, has queued and holds), when it has one;
 *   3. each budget in the order the request names them: the key's, then the account's (its own or its
 *      role's default), each less its period's spend and what its key or account holds.
 * The balance comes first because it is the one limit every paid request has, and the one its owner
 * can lift at once (a top-up); a request over several limits is told about the balance, then the key.
 *
 * A limit's `left` may be negative (an overage took it below zero); the refusal says 0 is available.
 * Generic over the budget's type so this folder needs nothing from the store's.
 */

/** What each limit leaves for the new hold, as one book read it in one atomic step. */
export interface AdmissionFigures<Budget> {
  /** Balance less holds and charges not yet written. */
  readonly balanceLeft: bigint;
  /** Spend limit less spent, queued and held; null when the key has no limit. */
  readonly keyLeft: bigint | null;
  /** Each budget with what it leaves, in the order the request names them. */
  readonly budgets: readonly { readonly budget: Budget; readonly left: bigint }[];
}

export type Admission<Budget> =
  | { readonly ok: true }
  /** `available` is what could have been held: the balance (or key limit) minus what is held already. */
  | { readonly ok: false; readonly reason: 'balance' | 'key_spend_limit'; readonly available: bigint }
  /** A budget's period spend plus its holds leaves less than the hold: `available` is what it leaves. */
  | { readonly ok: false; readonly reason: 'budget'; readonly budget: Budget; readonly available: bigint };

/** Whether `amount` may be held, by the rule above. */
export function admit<Budget>(amount: bigint, figures: AdmissionFigures<Budget>): Admission<Budget> {
  if (figures.balanceLeft < amount) return { ok: false, reason: 'balance', available: atLeastZero(figures.balanceLeft) };
  if (figures.keyLeft !== null && figures.keyLeft < amount) return { ok: false, reason: 'key_spend_limit', available: atLeastZero(figures.keyLeft) };
  for (const { budget, left } of figures.budgets) {
    if (left < amount) return { ok: false, reason: 'budget', budget, available: atLeastZero(left) };
  }
  return { ok: true };
}

function atLeastZero(amount: bigint): bigint {
  return amount < 0n ? 0n : amount;
}
