/**
 * Card payments as the store keeps them: orders (one per top-up asked of Stripe), the debits that take
 * funds back (refunds, disputes), the Stripe events already handled, and each account's payment
 * profile (saved card, auto-recharge, dispute flag). Every change of a balance here is one transaction
 * with its ledger row, so `tollgate ledger verify` covers it: credits − charges − debits = balance.
 */
import { randomBytes } from 'node:crypto';
import type { DisputeFact, EntryKind, LedgerMove, OrderBooks, OrderEvent, OrderFacts } from '../money/card-orders';

type OrderKind = 'checkout' | 'auto_recharge';
/** `pending`: asked of Stripe, not settled; `paid`: credited (once); `failed`/`expired`: nothing credited. */
export type OrderStatus = 'pending' | 'paid' | 'failed' | 'expired';
/** What added the funds: a card payment, a redeemed code, an administrator, a won dispute's give-back, or a transfer in (transfers.ts). */
export type CreditKind = 'topup' | 'redemption' | 'admin' | 'dispute_won' | 'transfer';

/** What took the funds: a card payment's refund or dispute, an administrator's adjustment, or a transfer out (transfers.ts). */
export type DebitKind = 'refund' | 'dispute' | 'adjustment' | 'transfer';

export interface PaymentOrder {
  readonly id: string;
  readonly accountId: string;
  readonly kind: OrderKind;
  readonly status: OrderStatus;
  /** ISO 4217, lower case. */
  readonly currency: string;
  /** What Stripe is asked for, in the currency's minor unit. */
  readonly amountMinor: number;
  /** What the ledger is credited once paid, in nano-units; fixed when the order is made. */
  readonly creditAmount: bigint;
  readonly sessionId: string | null;
  readonly paymentIntentId: string | null;
  /** The credit that paid the order in; null until then, and set once. */
  readonly creditId: string | null;
  /** What Stripe says was refunded so far, in minor units. */
  readonly refundedMinor: number;
  readonly disputed: boolean;
  /** Each dispute Stripe reported, with its amount and whether it was won. */
  readonly disputes: readonly DisputeFact[];
  readonly receiptUrl: string | null;
  /** Why it failed, in words fit for the account holder. */
  readonly error: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface NewOrder {
  readonly accountId: string;
  readonly kind: OrderKind;
  readonly currency: string;
  readonly amountMinor: number;
  readonly creditAmount: bigint;
}

/** Fields an order may take without money moving; an absent field is kept. */
export interface OrderUpdate {
  /** Only a pending order (or one not yet credited, for `failed`/`expired`) changes status this way. */
  readonly status?: Exclude<OrderStatus, 'paid'>;
  readonly sessionId?: string;
  readonly paymentIntentId?: string;
  readonly receiptUrl?: string;
  readonly error?: string | null;
}

export interface PaymentDebit {
  readonly id: string;
  readonly accountId: string;
  /** Nano-units taken, > 0. */
  readonly amount: bigint;
  readonly kind: DebitKind;
  /** The card payment it took from; null for an adjustment or a transfer, which no order made. */
  readonly orderId: string | null;
  /** The Stripe object and state it came from (`ch_…:refunded:500`, `dp_…`), or `adjustment:<id>`; unique. */
  readonly source: string;
  readonly note: string | null;
  /** Who took it: the administrator of an adjustment, `stripe` for a card payment's. */
  readonly actor: string;
  readonly createdAt: Date;
}

/** Credits and debits summed by kind over a range: the money side of the gateway's totals. */
export interface MovementTotals {
  readonly credits: Readonly<Record<CreditKind, bigint>>;
  readonly debits: Readonly<Record<DebitKind, bigint>>;
}

const CREDIT_KINDS = ['topup', 'redemption', 'admin', 'dispute_won', 'transfer'] as const satisfies readonly CreditKind[];
const DEBIT_KINDS = ['refund', 'dispute', 'adjustment', 'transfer'] as const satisfies readonly DebitKind[];

/** Sums rows of `{ kind, total }` (one table's GROUP BY kind) into a record with every kind present. */
function totalsByKind<K extends string>(kinds: readonly K[], rows: readonly { kind: string; total: string | bigint | number }[]): Record<K, bigint> {
  const totals = Object.fromEntries(kinds.map((kind) => [kind, 0n])) as Record<K, bigint>;
  for (const row of rows) if ((kinds as readonly string[]).includes(row.kind)) totals[row.kind as K] += BigInt(row.total);
  return totals;
}

/** The movement totals of a range from the two tables' sums by kind. */
export function movementTotalsOf(credits: readonly { kind: string; total: string }[], debits: readonly { kind: string; total: string }[]): MovementTotals {
  return { credits: totalsByKind(CREDIT_KINDS, credits), debits: totalsByKind(DEBIT_KINDS, debits) };
}

/** An administrator takes funds back: always with a note saying why. */
export interface NewAdjustment {
  readonly accountId: string;
  /** Nano-units, > 0. */
  readonly amount: bigint;
  readonly actor: string;
  readonly note: string;
}

export interface PaymentProfile {
  readonly accountId: string;
  readonly customerId: string | null;
  readonly paymentMethodId: string | null;
  readonly autoRecharge: boolean;
  /** Nano-units: a settle leaving the balance below this starts a recharge. */
  readonly threshold: bigint;
  /** Minor units charged per recharge. */
  readonly rechargeMinor: number;
  /** Most charged by auto-recharge per calendar month (UTC), in minor units. */
  readonly monthlyCapMinor: number;
  /** Auto-recharge failures in a row; three turn it off. */
  readonly failures: number;
  readonly lastError: string | null;
  /** The last recharge needs the card holder (authentication): only the console can finish it. */
  readonly needsAction: boolean;
  /** Set by a dispute: the operator should look at this account. */
  readonly flaggedAt: Date | null;
  readonly flagReason: string | null;
  readonly updatedAt: Date;
}

export type ProfileChanges = Partial<Omit<PaymentProfile, 'accountId' | 'updatedAt'>>;

export interface OrderFilter {
  readonly accountId?: string;
  readonly status?: OrderStatus;
  readonly kind?: OrderKind;
  /** Orders made before this instant. */
  readonly createdBefore?: Date;
  /** Newest first; at most this many (default 100). */
  readonly limit?: number;
}

/**
 * A card payment's credit to the ledger, by `stripe` (the shape of the store's CreditRecord): the
 * order's pay-in (`topup`) or what a won dispute gave back (`dispute_won`).
 */
export interface PaymentCredit {
  readonly id: string;
  readonly accountId: string;
  readonly amount: bigint;
  readonly kind: 'topup' | 'dispute_won';
  readonly actor: string;
  readonly note: string;
  readonly createdAt: Date;
}

/** An order after one of Stripe's events: the ledger entry the event wrote, if any (one at most). */
export interface SettledOrder {
  readonly order: PaymentOrder;
  /** A credit this call wrote (the pay-in, or a won dispute's give-back). */
  readonly credit: PaymentCredit | null;
  /** A debit this call wrote (a refund or a dispute). */
  readonly debit: PaymentDebit | null;
  /** This call marked the order paid (its credit may be null: refunds and disputes that came first took it all). */
  readonly paidIn: boolean;
}

export type RechargeRefusal = 'in_flight' | 'monthly_cap';

/** What claiming a Stripe event found: this caller handles it; it was handled before; another handler holds it now. */
export type EventClaim = 'claimed' | 'handled' | 'in_flight';

export interface CardPaymentStore {
  createOrder(input: NewOrder): Promise<PaymentOrder>;
  /**
   * A checkout order, made only while the account has fewer than `maxPending` checkouts pending:
   * counted with the write, so concurrent checkouts on any instance never pass the limit.
   */
  createCheckoutOrder(input: Omit<NewOrder, 'kind'>, maxPending: number): Promise<PaymentOrder | { refused: 'pending_checkouts' }>;
  /**
   * An auto-recharge order for the account, made only when none is pending and the month's
   * auto-recharge orders (paid or pending, made since `monthStart`) plus this one stay within `capMinor`:
   * checked and written in one transaction, so concurrent settles make one order at most.
   */
  createRechargeOrder(input: Omit<NewOrder, 'kind'>, monthStart: Date, capMinor: number): Promise<PaymentOrder | { refused: RechargeRefusal }>;
  findOrder(id: string): Promise<PaymentOrder | null>;
  findOrderByPaymentIntent(paymentIntentId: string): Promise<PaymentOrder | null>;
  listOrders(filter: OrderFilter): Promise<PaymentOrder[]>;
  /** Changes an order's Stripe ids, receipt, error and (while it is not credited) status; null when unknown. */
  updateOrder(id: string, update: OrderUpdate): Promise<PaymentOrder | null>;
  /**
   * Stripe says the order was paid: credits it once (its credit less what refunds and disputes that
   * came first took) and marks it paid, in one transaction, however many callers race on however
   * many instances. The arithmetic is `settle` (money/card-orders.ts), as for the three below.
   */
  creditOrder(id: string, update: Pick<OrderUpdate, 'paymentIntentId' | 'receiptUrl'>): Promise<SettledOrder | null>;
  /**
   * Stripe says `refundedMinor` (cumulative) of the order was refunded: recorded, and once the order
   * is paid in, debits what that takes of what the order still holds. The balance may go below zero:
   * what was spent stays spent.
   */
  refundOrder(id: string, refundedMinor: number, source: string): Promise<SettledOrder | null>;
  /**
   * A dispute `disputeId` of `disputedMinor`: recorded, the order marked disputed, the account flagged
   * and its auto-recharge off; once the order is paid in, debits what it takes.
   */
  disputeOrder(id: string, disputedMinor: number, disputeId: string, reason: string): Promise<SettledOrder | null>;
  /** Dispute `disputeId` was won: gives back (a `dispute_won` credit) what the order no longer owes the dispute. */
  disputeWon(id: string, disputedMinor: number, disputeId: string): Promise<SettledOrder | null>;
  /**
   * Claims a Stripe event id for handling at `now`, in one statement: 'claimed' for exactly one caller
   * however many race, on however many instances (the row's insert is the claim; so is taking over a
   * claim made before `staleBefore` and never finished, whose handler died); 'handled' once a handler
   * finished it; 'in_flight' while another handler's claim is younger than that.
   */
  claimEvent(id: string, type: string, now: Date, staleBefore: Date): Promise<EventClaim>;
  /** The claimed event was handled at `at`: the order it concerned, if any, is noted. */
  finishEvent(id: string, orderId: string | null, at: Date): Promise<void>;
  /** Handling the claimed event failed: an unfinished claim goes, so Stripe's retry is handled. */
  releaseEvent(id: string): Promise<void>;
  /** Whether this event id was claimed. */
  seenEvent(id: string): Promise<boolean>;
  /** Takes `amount` from the account's balance as an adjustment: the debit row and the balance in one transaction. */
  debitAccount(input: NewAdjustment): Promise<PaymentDebit>;
  /** What moved in `[since, until)` across every account: credits and debits summed by kind. */
  movementTotals(since: Date, until: Date): Promise<MovementTotals>;
  /** One account's debits (or everyone's when null), newest first; transfers are listed as transfers (transfers.ts), not here. */
  listDebits(accountId: string | null, limit?: number): Promise<PaymentDebit[]>;
  profile(accountId: string): Promise<PaymentProfile | null>;
  /** Creates or changes the account's profile; returns it as stored. */
  saveProfile(accountId: string, changes: ProfileChanges): Promise<PaymentProfile>;
  /** Accounts with auto-recharge on (for the settle hook's cache). */
  listAutoRecharge(): Promise<PaymentProfile[]>;
  /** Takes (or renews) the lease `name` for `holder` until `until`; false while another holder's lease runs. */
  takeLease(name: string, holder: string, until: Date): Promise<boolean>;
}

/** The debit row of an adjustment, before it is written. */
export function adjustmentDebit(input: NewAdjustment): PaymentDebit {
  if (input.amount <= 0n) throw new RangeError('an adjustment must take a positive amount');
  const id = newPaymentId('db_');
  return { id, accountId: input.accountId, amount: input.amount, kind: 'adjustment', orderId: null, source: `adjustment:${id}`, note: input.note, actor: input.actor, createdAt: new Date() };
}

/** The note of a payment's credit: the order and the Stripe object it came from. */
function paymentCreditNote(order: PaymentOrder, paymentIntentId: string | null): string {
  const stripe = paymentIntentId ?? order.sessionId ?? 'unknown';
  return `card payment ${order.id} (Stripe ${stripe})`;
}

/** A new id: `pay_` an order, `cr_` a credit, `db_` a debit, and 16 hex digits. */
export function newPaymentId(prefix: 'pay_' | 'cr_' | 'db_'): string {
  return prefix + randomBytes(8).toString('hex');
}

/** The profile columns a `ProfileChanges` field writes, with the value as stored. */
export function profileColumns(changes: ProfileChanges, date: (at: Date) => unknown, flag: (on: boolean) => unknown): [string, unknown][] {
  const columns: [string, unknown][] = [];
  const set = (column: string, value: unknown) => columns.push([column, value]);
  if (changes.customerId !== undefined) set('customer_id', changes.customerId);
  if (changes.paymentMethodId !== undefined) set('payment_method_id', changes.paymentMethodId);
  if (changes.autoRecharge !== undefined) set('auto_recharge', flag(changes.autoRecharge));
  if (changes.threshold !== undefined) set('threshold', String(changes.threshold));
  if (changes.rechargeMinor !== undefined) set('recharge_minor', changes.rechargeMinor);
  if (changes.monthlyCapMinor !== undefined) set('monthly_cap_minor', changes.monthlyCapMinor);
  if (changes.failures !== undefined) set('failures', changes.failures);
  if (changes.lastError !== undefined) set('last_error', changes.lastError);
  if (changes.needsAction !== undefined) set('needs_action', flag(changes.needsAction));
  if (changes.flaggedAt !== undefined) set('flagged_at', changes.flaggedAt === null ? null : date(changes.flaggedAt));
  if (changes.flagReason !== undefined) set('flag_reason', changes.flagReason);
  return columns;
}

/** The order's facts as `settle` reads them. */
export function factsOf(order: PaymentOrder): OrderFacts {
  return {
    amountMinor: order.amountMinor,
    creditAmount: order.creditAmount,
    paid: order.status === 'paid',
    refundedMinor: order.refundedMinor,
    disputes: order.disputes,
  };
}

/** The order's ledger sums by entry kind (as each store reads them) as `settle` reads them. */
export function booksOf(order: PaymentOrder, sums: readonly { kind: EntryKind; total: bigint }[]): OrderBooks {
  const total = (kind: EntryKind) => sums.filter((row) => row.kind === kind).reduce((sum, row) => sum + row.total, 0n);
  return { credited: order.status === 'paid' ? total('topup') : null, refunded: total('refund'), disputed: total('dispute'), reinstated: total('dispute_won') };
}

/** Where an event came from and what its entry's note says, as the payment calls are given it. */
export interface EventContext {
  /** The Stripe object and state (`ch_…:refunded:500`): a debit's unique source. */
  readonly source: string;
  readonly paymentIntentId: string | null;
  readonly reason?: string;
}

/** The ledger row `move` is for the order: a credit or a debit, with its id, note and time. */
export function entryOf(order: PaymentOrder, move: LedgerMove, event: OrderEvent, context: EventContext): { credit: PaymentCredit } | { debit: PaymentDebit } {
  const createdAt = new Date();
  const base = { accountId: order.accountId, amount: move.amount, createdAt };
  switch (move.kind) {
    case 'topup':
      return { credit: { ...base, id: newPaymentId('cr_'), kind: 'topup', actor: 'stripe', note: paymentCreditNote(order, context.paymentIntentId) } };
    case 'dispute_won': {
      const dispute = 'disputeId' in event ? event.disputeId : 'unknown';
      return { credit: { ...base, id: newPaymentId('cr_'), kind: 'dispute_won', actor: 'stripe', note: `dispute ${dispute} of card payment ${order.id} won: funds given back` } };
    }
    case 'refund':
    case 'dispute': {
      const note =
        event.type === 'refunded'
          ? `refund of ${event.refundedMinor} (minor units, cumulative) of card payment ${order.id}`
          : `dispute of ${'amountMinor' in event ? event.amountMinor : 0} (minor units) of card payment ${order.id}: ${context.reason ?? 'no reason given'}`;
      return { debit: { ...base, id: newPaymentId('db_'), kind: move.kind, orderId: order.id, source: context.source, note, actor: 'stripe' } };
    }
  }
}
