/**
 * Card payments as the store keeps them: orders (one per top-up asked of Stripe), the debits that take
 * funds back (refunds, disputes), the Stripe events already handled, and each account's payment
 * profile (saved card, auto-recharge, dispute flag). Every change of a balance here is one transaction
 * with its ledger row, so `tollgate ledger verify` covers it: credits − charges − debits = balance.
 */
import { randomBytes } from 'node:crypto';

type OrderKind = 'checkout' | 'auto_recharge';
/** `pending`: asked of Stripe, not settled; `paid`: credited (once); `failed`/`expired`: nothing credited. */
export type OrderStatus = 'pending' | 'paid' | 'failed' | 'expired';
export type DebitKind = 'refund' | 'dispute';

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
  readonly orderId: string;
  /** The Stripe object and state it came from (`ch_…:refunded:500`, `dp_…`); unique. */
  readonly source: string;
  readonly note: string | null;
  readonly createdAt: Date;
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

/** The ledger's credit for a paid order: a `topup` credit by `stripe` (the shape of the store's CreditRecord). */
export interface PaymentCredit {
  readonly id: string;
  readonly accountId: string;
  readonly amount: bigint;
  readonly kind: 'topup';
  readonly actor: string;
  readonly note: string;
  readonly createdAt: Date;
}

export interface CreditedOrder {
  readonly order: PaymentOrder;
  /** The credit this call wrote; null when the order had been credited already (or is unknown). */
  readonly credit: PaymentCredit | null;
}

export interface DebitedOrder {
  readonly order: PaymentOrder;
  /** The debit this call wrote; null when there was nothing (more) to take. */
  readonly debit: PaymentDebit | null;
}

export type RechargeRefusal = 'in_flight' | 'monthly_cap';

export interface PaymentStore {
  createOrder(input: NewOrder): Promise<PaymentOrder>;
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
   * Credits the order's `creditAmount` to its account as a `topup` credit and marks it paid, in one
   * transaction, at most once however many callers race on however many instances.
   */
  creditOrder(id: string, update: Pick<OrderUpdate, 'paymentIntentId' | 'receiptUrl'>): Promise<CreditedOrder | null>;
  /**
   * Stripe says `refundedMinor` (cumulative) of the order was refunded: debits the part of the credit
   * that covers and has not been debited yet (the whole credit for a full refund), once per `source`.
   * The balance may go below zero: what was spent stays spent.
   */
  refundOrder(id: string, refundedMinor: number, source: string): Promise<DebitedOrder | null>;
  /**
   * A dispute of `disputedMinor`: debits its share of the credit (what refunds have not taken already),
   * once per `source`, marks the order disputed, flags the account and turns its auto-recharge off.
   */
  disputeOrder(id: string, disputedMinor: number, source: string, reason: string): Promise<DebitedOrder | null>;
  /** Records a Stripe event id; false when it was recorded before. */
  recordEvent(id: string, type: string, orderId: string | null): Promise<boolean>;
  /** Whether this event id was recorded. */
  seenEvent(id: string): Promise<boolean>;
  /** One account's debits (or everyone's when null), newest first. */
  listDebits(accountId: string | null, limit?: number): Promise<PaymentDebit[]>;
  profile(accountId: string): Promise<PaymentProfile | null>;
  /** Creates or changes the account's profile; returns it as stored. */
  saveProfile(accountId: string, changes: ProfileChanges): Promise<PaymentProfile>;
  /** Accounts with auto-recharge on (for the settle hook's cache). */
  listAutoRecharge(): Promise<PaymentProfile[]>;
  /** Takes (or renews) the lease `name` for `holder` until `until`; false while another holder's lease runs. */
  takeLease(name: string, holder: string, until: Date): Promise<boolean>;
}

/** The note of a payment's credit: the order and the Stripe object it came from. */
export function paymentCreditNote(order: PaymentOrder, paymentIntentId: string | null): string {
  const stripe = paymentIntentId ?? order.sessionId ?? 'unknown';
  return `card payment ${order.id} (Stripe ${stripe})`;
}

/** The nano-units `minor` of the order stands for: its share of the credit, rounded down, whole at the full amount. */
export function creditShare(order: Pick<PaymentOrder, 'creditAmount' | 'amountMinor'>, minor: number): bigint {
  if (minor >= order.amountMinor) return order.creditAmount;
  return (order.creditAmount * BigInt(minor)) / BigInt(order.amountMinor);
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
