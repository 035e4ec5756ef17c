/**
 * What a card payment's ledger must hold, whatever order Stripe's events arrive in. The events of one
 * order (paid, refunded so far, each dispute opened or won) are merged into its facts, a merge that
 * gives the same facts for any arrival order and any repeat; the facts alone say what the order owes
 * the account; the ledger moves the difference between that and what it moved already. So a refund
 * that comes before the payment lowers the credit, a refund after a dispute takes only what is left,
 * and a won dispute gives back what the facts no longer take. Pure: each store reads the order's rows
 * under its lock, asks `settle`, and writes what it says.
 */

export interface DisputeFact {
  /** Stripe's dispute id (`dp_…`). */
  readonly id: string;
  /** Disputed, in the currency's minor unit. */
  readonly amountMinor: number;
  /** Closed in the merchant's favour: Stripe gave the funds back. */
  readonly won: boolean;
}

/** What Stripe said of one order so far. */
export interface OrderFacts {
  /** What Stripe charges, in minor units, and what the ledger credits for all of it, in nano-units. */
  readonly amountMinor: number;
  readonly creditAmount: bigint;
  readonly paid: boolean;
  /** Refunded so far (cumulative, as Stripe reports it), in minor units. */
  readonly refundedMinor: number;
  readonly disputes: readonly DisputeFact[];
}

/** What the ledger moved for one order so far, by kind of entry, in nano-units. */
export interface OrderBooks {
  /** The order's pay-in credit; null while the order was never paid in (zero when it was, for nothing). */
  readonly credited: bigint | null;
  readonly refunded: bigint;
  readonly disputed: bigint;
  /** Given back by won disputes. */
  readonly reinstated: bigint;
}

export type OrderEvent =
  | { readonly type: 'paid' }
  | { readonly type: 'refunded'; readonly refundedMinor: number }
  | { readonly type: 'disputed'; readonly disputeId: string; readonly amountMinor: number }
  | { readonly type: 'dispute_won'; readonly disputeId: string; readonly amountMinor: number };

/** `topup` and `dispute_won` are credits to the account; `refund` and `dispute` are debits. */
export type EntryKind = 'topup' | 'refund' | 'dispute' | 'dispute_won';

export interface LedgerMove {
  readonly kind: EntryKind;
  /** Nano-units, > 0. */
  readonly amount: bigint;
}

export interface Settlement {
  /** The facts with the event merged in: what the store keeps of the order. */
  readonly facts: OrderFacts;
  /** The order is paid in now (marked paid), with or without a credit to write. */
  readonly payIn: boolean;
  /** The one ledger entry to write, if any. */
  readonly move: LedgerMove | null;
}

export const NO_BOOKS: OrderBooks = { credited: null, refunded: 0n, disputed: 0n, reinstated: 0n };

/** The nano-units `minor` of the order stands for: its share of the credit, rounded down, whole at the full amount. */
function creditShare(order: Pick<OrderFacts, 'creditAmount' | 'amountMinor'>, minor: number): bigint {
  if (minor >= order.amountMinor) return order.creditAmount;
  if (minor <= 0) return 0n;
  return (order.creditAmount * BigInt(minor)) / BigInt(order.amountMinor);
}

function isCredit(kind: EntryKind): boolean {
  return kind === 'topup' || kind === 'dispute_won';
}

/** The move as the balance sees it: + for a credit, − for a debit. */
export function signedAmount(move: LedgerMove | null): bigint {
  if (move === null) return 0n;
  return isCredit(move.kind) ? move.amount : -move.amount;
}

/**
 * `facts` with `event` merged in. Commutative and idempotent: refunds keep the largest cumulative
 * figure, a dispute is kept once by id and stays won once won (a late "opened" does not reopen it).
 */
function withEvent(facts: OrderFacts, event: OrderEvent): OrderFacts {
  switch (event.type) {
    case 'paid':
      return facts.paid ? facts : { ...facts, paid: true };
    case 'refunded':
      return event.refundedMinor <= facts.refundedMinor ? facts : { ...facts, refundedMinor: event.refundedMinor };
    case 'disputed':
    case 'dispute_won': {
      const won = event.type === 'dispute_won';
      const known = facts.disputes.find((dispute) => dispute.id === event.disputeId);
      const merged: DisputeFact = {
        id: event.disputeId,
        amountMinor: Math.max(known?.amountMinor ?? 0, event.amountMinor),
        won: (known?.won ?? false) || won,
      };
      if (known !== undefined && known.amountMinor === merged.amountMinor && known.won === merged.won) return facts;
      const others = facts.disputes.filter((dispute) => dispute.id !== event.disputeId);
      // Kept sorted by id, so the same facts are the same value whatever the arrival order.
      return { ...facts, disputes: [...others, merged].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) };
    }
  }
}

/**
 * What the order owes the account by its facts: nothing until it is paid; then its credit less what
 * refunds and open (or lost) disputes take together, never less than nothing.
 */
export function owed(facts: OrderFacts): bigint {
  if (!facts.paid) return 0n;
  const disputedMinor = facts.disputes.reduce((sum, dispute) => (dispute.won ? sum : sum + dispute.amountMinor), 0);
  const taken = creditShare(facts, facts.refundedMinor + disputedMinor);
  return facts.creditAmount - taken;
}

/** What the ledger holds for the order now: its credits less its debits. */
export function booked(books: OrderBooks): bigint {
  return (books.credited ?? 0n) + books.reinstated - books.refunded - books.disputed;
}

/**
 * Merges `event` into `facts` and says what the ledger must move so that it holds what the order
 * owes: the pay-in credit (the credit less what was already refunded or disputed) when the order is
 * first paid; afterwards a debit named after the event that took it, or a `dispute_won` credit.
 */
export function settle(facts: OrderFacts, books: OrderBooks, event: OrderEvent): Settlement {
  const merged = withEvent(facts, event);
  if (!merged.paid) return { facts: merged, payIn: false, move: null };
  const target = owed(merged);
  if (books.credited === null) return { facts: merged, payIn: true, move: target > 0n ? { kind: 'topup', amount: target } : null };
  const delta = target - booked(books);
  if (delta === 0n) return { facts: merged, payIn: false, move: null };
  if (delta > 0n) return { facts: merged, payIn: false, move: { kind: 'dispute_won', amount: delta } };
  return { facts: merged, payIn: false, move: { kind: event.type === 'refunded' ? 'refund' : 'dispute', amount: -delta } };
}

/** `books` after `move` was written (and, with `payIn`, the pay-in recorded). */
export function afterMove(books: OrderBooks, settlement: Pick<Settlement, 'payIn' | 'move'>): OrderBooks {
  const { payIn, move } = settlement;
  const credited = payIn ? 0n : books.credited;
  if (move === null) return { ...books, credited };
  switch (move.kind) {
    case 'topup':
      return { ...books, credited: (credited ?? 0n) + move.amount };
    case 'refund':
      return { ...books, credited, refunded: books.refunded + move.amount };
    case 'dispute':
      return { ...books, credited, disputed: books.disputed + move.amount };
    case 'dispute_won':
      return { ...books, credited, reinstated: books.reinstated + move.amount };
  }
}

/** Disputes as the store keeps them (a JSON column): `[{"id": "dp_…", "amount_minor": 1000, "won": false}]`. */
export function disputesText(disputes: readonly DisputeFact[]): string {
  return JSON.stringify(disputes.map((dispute) => ({ id: dispute.id, amount_minor: dispute.amountMinor, won: dispute.won })));
}

export function parseDisputes(text: string): DisputeFact[] {
  const rows = JSON.parse(text) as { id: string; amount_minor: number; won: boolean }[];
  return rows.map((row) => ({ id: row.id, amountMinor: row.amount_minor, won: row.won }));
}
