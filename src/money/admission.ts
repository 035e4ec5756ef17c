/**
 * Admission: whether a request's hold fits the limits on its money, and which limit refuses it when it
 * does not. One rule for every balance book; each book only reads the figures below atomically (its
 * lock, transaction or script) and writes the hold when the rule admits it.
 *
 * The limits are checked in one order, and the first one the hold does not fit is the refusal's reason:
 *   1. the account's balance (less what is held and what is charged but not yet in the store);
 *   2. the key's spend limit (less what the key spent, has queued and holds), when it has one;
 *   3. each budget in the order the request names them: the key's, then the member's (a member's key in
 *      an organisation: what the organisation lets that member spend through all of their keys), then
 *      the account's (its own or its role's default), each less its period's spend and what its key,
 *      member or account holds;
 *   4. each session budget, the key's then the account's, when the request names a session: less what
 *      that key or account spent in the session and what the session holds (its requests under way).
 * The balance comes first because it is the one limit every paid request has, and the one its owner
 * can lift at once (a top-up); a request over several limits is told about the balance, then the key.
 * Session budgets come last: a new session escapes them and no other limit, so a request over a
 * period budget as well is told about the one a new session would not lift.
 *
 * A limit's `left` may be negative (an overage took it below zero); the refusal says 0 is available.
 * Generic over the budgets' types so this folder needs nothing from the store's.
 */

/** What each limit leaves for the new hold, as one book read it in one atomic step. */
export interface AdmissionFigures<Budget, SessionBudget = never> {
  /** Balance less holds and charges not yet written. */
  readonly balanceLeft: bigint;
  /** Spend limit less spent, queued and held; null when the key has no limit. */
  readonly keyLeft: bigint | null;
  /** Each budget with what it leaves, in the order the request names them. */
  readonly budgets: readonly { readonly budget: Budget; readonly left: bigint }[];
  /** Each session budget with what its session spent (charged, queued or not) and holds; absent: none. */
  readonly sessionBudgets?: readonly SessionFigures<SessionBudget>[];
}

interface SessionFigures<SessionBudget> {
  readonly budget: SessionBudget & { readonly amount: bigint };
  readonly spent: bigint;
  readonly held: bigint;
}

export type Admission<Budget, SessionBudget = never> =
  | { readonly ok: true }
  /** `available` is what could have been held: the balance (or key limit) minus what is held already. */
  | { readonly ok: false; readonly reason: 'balance' | 'key_spend_limit'; readonly available: bigint }
  /** A budget's period spend plus its holds leaves less than the hold: `available` is what it leaves. */
  | { readonly ok: false; readonly reason: 'budget'; readonly budget: Budget; readonly available: bigint }
  /** A session's spend plus its holds leaves less than the hold: `spent` is what it was charged. */
  | { readonly ok: false; readonly reason: 'session_budget'; readonly budget: SessionBudget; readonly spent: bigint; readonly available: bigint };

/** Whether `amount` may be held, by the rule above. */
export function admit<Budget, SessionBudget = never>(amount: bigint, figures: AdmissionFigures<Budget, SessionBudget>): Admission<Budget, SessionBudget> {
  if (figures.balanceLeft < amount) return { ok: false, reason: 'balance', available: atLeastZero(figures.balanceLeft) };
  if (figures.keyLeft !== null && figures.keyLeft < amount) return { ok: false, reason: 'key_spend_limit', available: atLeastZero(figures.keyLeft) };
  for (const { budget, left } of figures.budgets) {
    if (left < amount) return { ok: false, reason: 'budget', budget, available: atLeastZero(left) };
  }
  for (const { budget, spent, held } of figures.sessionBudgets ?? []) {
    const left = budget.amount - spent - held;
    if (left < amount) return { ok: false, reason: 'session_budget', budget, spent, available: atLeastZero(left) };
  }
  return { ok: true };
}

function atLeastZero(amount: bigint): bigint {
  return amount < 0n ? 0n : amount;
}
