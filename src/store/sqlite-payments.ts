/**
 * Card payments on SQLite (see payments.ts). Each money-moving call is one IMMEDIATE transaction on the
 * single writer: the order's guard column, the ledger row and the account's balance change together.
 */
import { disputesText, parseDisputes, settle, type EntryKind, type OrderEvent } from '../money/card-orders';
import type { SqliteDatabase } from './sqlite-driver';
import {
  adjustmentDebit,
  booksOf,
  entryOf,
  movementTotalsOf,
  factsOf,
  profileColumns,
  newPaymentId,
  type DebitKind,
  type EventClaim,
  type EventContext,
  type MovementTotals,
  type NewAdjustment,
  type NewOrder,
  type OrderFilter,
  type OrderUpdate,
  type PaymentCredit,
  type PaymentDebit,
  type PaymentOrder,
  type PaymentProfile,
  type CardPaymentStore,
  type ProfileChanges,
  type RechargeRefusal,
  type SettledOrder,
} from './payments';

const ORDER_COLUMNS = `id, account_id, kind, status, currency, amount_minor, CAST(credit_amount AS TEXT) AS credit_amount, session_id,
  payment_intent_id, credit_id, refunded_minor, disputed, disputes, receipt_url, error, created_at, updated_at`;
const DEBIT_COLUMNS = 'id, account_id, CAST(amount AS TEXT) AS amount, kind, order_id, source, note, actor, created_at';
const PROFILE_COLUMNS = `account_id, customer_id, payment_method_id, auto_recharge, CAST(threshold AS TEXT) AS threshold, recharge_minor,
  monthly_cap_minor, failures, last_error, needs_action, flagged_at, flag_reason, updated_at`;

interface OrderRow {
  id: string;
  account_id: string;
  kind: PaymentOrder['kind'];
  status: PaymentOrder['status'];
  currency: string;
  amount_minor: number;
  credit_amount: string;
  session_id: string | null;
  payment_intent_id: string | null;
  credit_id: string | null;
  refunded_minor: number;
  disputed: number;
  disputes: string;
  receipt_url: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
}

interface DebitRow {
  id: string;
  account_id: string;
  amount: string;
  kind: DebitKind;
  order_id: string | null;
  source: string;
  note: string | null;
  actor: string | null;
  created_at: number;
}

interface ProfileRow {
  account_id: string;
  customer_id: string | null;
  payment_method_id: string | null;
  auto_recharge: number;
  threshold: string;
  recharge_minor: number;
  monthly_cap_minor: number;
  failures: number;
  last_error: string | null;
  needs_action: number;
  flagged_at: number | null;
  flag_reason: string | null;
  updated_at: number;
}

function toOrder(row: OrderRow): PaymentOrder {
  return {
    id: row.id,
    accountId: row.account_id,
    kind: row.kind,
    status: row.status,
    currency: row.currency,
    amountMinor: row.amount_minor,
    creditAmount: BigInt(row.credit_amount),
    sessionId: row.session_id,
    paymentIntentId: row.payment_intent_id,
    creditId: row.credit_id,
    refundedMinor: row.refunded_minor,
    disputed: row.disputed === 1,
    disputes: parseDisputes(row.disputes),
    receiptUrl: row.receipt_url,
    error: row.error,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

function toDebit(row: DebitRow): PaymentDebit {
  return {
    id: row.id,
    accountId: row.account_id,
    amount: BigInt(row.amount),
    kind: row.kind,
    orderId: row.order_id,
    source: row.source,
    note: row.note,
    // Debits from before adjustments had no actor column: each was a card payment's, so Stripe's.
    actor: row.actor ?? 'stripe',
    createdAt: new Date(row.created_at),
  };
}

function toProfile(row: ProfileRow): PaymentProfile {
  return {
    accountId: row.account_id,
    customerId: row.customer_id,
    paymentMethodId: row.payment_method_id,
    autoRecharge: row.auto_recharge === 1,
    threshold: BigInt(row.threshold),
    rechargeMinor: row.recharge_minor,
    monthlyCapMinor: row.monthly_cap_minor,
    failures: row.failures,
    lastError: row.last_error,
    needsAction: row.needs_action === 1,
    flaggedAt: row.flagged_at === null ? null : new Date(row.flagged_at),
    flagReason: row.flag_reason,
    updatedAt: new Date(row.updated_at),
  };
}

export class SqlitePayments implements CardPaymentStore {
  constructor(
    private readonly db: SqliteDatabase,
    /** Told when a balance moved, so a book keeping balances in memory reads them again. */
    private readonly fundsMoved: () => void,
  ) {}

  async createOrder(input: NewOrder): Promise<PaymentOrder> {
    return this.db.transaction(() => this.insertOrder(input)).immediate();
  }

  async createCheckoutOrder(input: Omit<NewOrder, 'kind'>, maxPending: number): Promise<PaymentOrder | { refused: 'pending_checkouts' }> {
    return this.db
      .transaction((): PaymentOrder | { refused: 'pending_checkouts' } => {
        const pending = this.db
          .prepare<[string], number>("SELECT count(*) FROM payment_orders WHERE account_id = ? AND kind = 'checkout' AND status = 'pending'")
          .pluck()
          .get(input.accountId);
        if ((pending ?? 0) >= maxPending) return { refused: 'pending_checkouts' };
        return this.insertOrder({ ...input, kind: 'checkout' });
      })
      .immediate();
  }

  async createRechargeOrder(input: Omit<NewOrder, 'kind'>, monthStart: Date, capMinor: number): Promise<PaymentOrder | { refused: RechargeRefusal }> {
    return this.db
      .transaction((): PaymentOrder | { refused: RechargeRefusal } => {
        const pending = this.db
          .prepare<[string], number>("SELECT count(*) FROM payment_orders WHERE account_id = ? AND kind = 'auto_recharge' AND status = 'pending'")
          .pluck()
          .get(input.accountId);
        if ((pending ?? 0) > 0) return { refused: 'in_flight' };
        const spent = this.db
          .prepare<[string, number], number>(
            "SELECT COALESCE(sum(amount_minor), 0) FROM payment_orders WHERE account_id = ? AND kind = 'auto_recharge' AND status IN ('pending', 'paid') AND created_at >= ?",
          )
          .pluck()
          .get(input.accountId, monthStart.getTime());
        if ((spent ?? 0) + input.amountMinor > capMinor) return { refused: 'monthly_cap' };
        return this.insertOrder({ ...input, kind: 'auto_recharge' });
      })
      .immediate();
  }

  async findOrder(id: string): Promise<PaymentOrder | null> {
    return this.orderById(id);
  }

  async findOrderByPaymentIntent(paymentIntentId: string): Promise<PaymentOrder | null> {
    const row = this.db.prepare<[string], OrderRow>(`SELECT ${ORDER_COLUMNS} FROM payment_orders WHERE payment_intent_id = ?`).get(paymentIntentId);
    return row === undefined ? null : toOrder(row);
  }

  async takeLease(name: string, holder: string, until: Date): Promise<boolean> {
    const now = Date.now();
    const result = this.db
      .prepare<[string, string, number, number]>(
        `INSERT INTO payment_leases (name, holder, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
         WHERE payment_leases.expires_at < ? OR payment_leases.holder = excluded.holder`,
      )
      .run(name, holder, until.getTime(), now);
    return result.changes > 0;
  }

  async listOrders(filter: OrderFilter): Promise<PaymentOrder[]> {
    const where: string[] = [];
    const params: Record<string, unknown> = { limit: filter.limit ?? 100 };
    if (filter.accountId !== undefined) {
      where.push('account_id = @accountId');
      params.accountId = filter.accountId;
    }
    if (filter.status !== undefined) {
      where.push('status = @status');
      params.status = filter.status;
    }
    if (filter.kind !== undefined) {
      where.push('kind = @kind');
      params.kind = filter.kind;
    }
    if (filter.createdBefore !== undefined) {
      where.push('created_at < @before');
      params.before = filter.createdBefore.getTime();
    }
    const sql = `SELECT ${ORDER_COLUMNS} FROM payment_orders ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
                 ORDER BY created_at DESC, rowid DESC LIMIT @limit`;
    return this.db.prepare<[Record<string, unknown>], OrderRow>(sql).all(params).map(toOrder);
  }

  async updateOrder(id: string, update: OrderUpdate): Promise<PaymentOrder | null> {
    return this.db
      .transaction(() => {
        const order = this.orderById(id);
        if (order === null) return null;
        const sets: string[] = ['updated_at = @now'];
        const params: Record<string, unknown> = { id, now: Date.now() };
        // A credited order stays paid whatever arrives after (an expiry, a late failure).
        if (update.status !== undefined && order.status !== 'paid') {
          sets.push('status = @status');
          params.status = update.status;
        }
        for (const [field, column] of [['sessionId', 'session_id'], ['paymentIntentId', 'payment_intent_id'], ['receiptUrl', 'receipt_url'], ['error', 'error']] as const) {
          if (update[field] === undefined) continue;
          sets.push(`${column} = @${column}`);
          params[column] = update[field];
        }
        this.db.prepare<[Record<string, unknown>]>(`UPDATE payment_orders SET ${sets.join(', ')} WHERE id = @id`).run(params);
        return this.orderById(id);
      })
      .immediate();
  }

  async creditOrder(id: string, update: Pick<OrderUpdate, 'paymentIntentId' | 'receiptUrl'>): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'paid' }, (order) => ({ source: `${id}:paid`, paymentIntentId: update.paymentIntentId ?? order.paymentIntentId }), update.receiptUrl);
  }

  async refundOrder(id: string, refundedMinor: number, source: string): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'refunded', refundedMinor }, (order) => ({ source, paymentIntentId: order.paymentIntentId }));
  }

  async disputeOrder(id: string, disputedMinor: number, disputeId: string, reason: string): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'disputed', disputeId, amountMinor: disputedMinor }, (order) => ({ source: `${disputeId}:disputed:${disputedMinor}`, paymentIntentId: order.paymentIntentId, reason }));
  }

  async disputeWon(id: string, disputedMinor: number, disputeId: string): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'dispute_won', disputeId, amountMinor: disputedMinor }, (order) => ({ source: `${disputeId}:won`, paymentIntentId: order.paymentIntentId }));
  }

  async claimEvent(id: string, type: string, now: Date, staleBefore: Date): Promise<EventClaim> {
    // The insert, or the takeover of a dead handler's claim, is one statement: one caller changes the row.
    const { changes } = this.db
      .prepare<[string, string, number, number, number]>(
        `INSERT INTO payment_events (id, type, order_id, received_at, claimed_at, handled_at) VALUES (?, ?, NULL, ?, ?, NULL)
         ON CONFLICT (id) DO UPDATE SET claimed_at = excluded.claimed_at
          WHERE payment_events.handled_at IS NULL AND payment_events.claimed_at < ?`,
      )
      .run(id, type, now.getTime(), now.getTime(), staleBefore.getTime());
    if (changes > 0) return 'claimed';
    const handledAt = this.db.prepare<[string], number | null>('SELECT handled_at FROM payment_events WHERE id = ?').pluck().get(id);
    return handledAt === null ? 'in_flight' : 'handled';
  }

  async finishEvent(id: string, orderId: string | null, at: Date): Promise<void> {
    this.db.prepare<[string | null, number, string]>('UPDATE payment_events SET order_id = ?, handled_at = ? WHERE id = ?').run(orderId, at.getTime(), id);
  }

  async releaseEvent(id: string): Promise<void> {
    this.db.prepare<[string]>('DELETE FROM payment_events WHERE id = ? AND handled_at IS NULL').run(id);
  }

  async seenEvent(id: string): Promise<boolean> {
    return this.db.prepare<[string], number>('SELECT 1 FROM payment_events WHERE id = ?').pluck().get(id) !== undefined;
  }

  async debitAccount(input: NewAdjustment): Promise<PaymentDebit> {
    const debit = adjustmentDebit(input);
    this.db.transaction(() => this.insertDebit(debit)).immediate();
    this.fundsMoved();
    return debit;
  }

  async movementTotals(since: Date, until: Date): Promise<MovementTotals> {
    const sums = (table: 'credits' | 'debits') =>
      this.db
        .prepare<[number, number], { kind: string; total: string }>(
          `SELECT kind, CAST(sum(amount) AS TEXT) AS total FROM ${table} WHERE created_at >= ? AND created_at < ? GROUP BY kind`,
        )
        .all(since.getTime(), until.getTime());
    return movementTotalsOf(sums('credits'), sums('debits'));
  }

  async listDebits(accountId: string | null, limit = 100): Promise<PaymentDebit[]> {
    return this.db
      .prepare<[string | null, string | null, number], DebitRow>(
        `SELECT ${DEBIT_COLUMNS} FROM debits WHERE (? IS NULL OR account_id = ?) AND kind <> 'transfer' ORDER BY created_at DESC, rowid DESC LIMIT ?`,
      )
      .all(accountId, accountId, limit)
      .map(toDebit);
  }

  async profile(accountId: string): Promise<PaymentProfile | null> {
    const row = this.db.prepare<[string], ProfileRow>(`SELECT ${PROFILE_COLUMNS} FROM payment_profiles WHERE account_id = ?`).get(accountId);
    return row === undefined ? null : toProfile(row);
  }

  async saveProfile(accountId: string, changes: ProfileChanges): Promise<PaymentProfile> {
    return this.db.transaction(() => this.upsertProfile(accountId, changes)).immediate();
  }

  async listAutoRecharge(): Promise<PaymentProfile[]> {
    return this.db.prepare<[], ProfileRow>(`SELECT ${PROFILE_COLUMNS} FROM payment_profiles WHERE auto_recharge = 1`).all().map(toProfile);
  }

  private orderById(id: string): PaymentOrder | null {
    const row = this.db.prepare<[string], OrderRow>(`SELECT ${ORDER_COLUMNS} FROM payment_orders WHERE id = ?`).get(id);
    return row === undefined ? null : toOrder(row);
  }

  private insertOrder(input: NewOrder): PaymentOrder {
    const now = Date.now();
    const id = newPaymentId('pay_');
    this.db
      .prepare<[Record<string, unknown>]>(
        `INSERT INTO payment_orders (id, account_id, kind, status, currency, amount_minor, credit_amount, created_at, updated_at)
         VALUES (@id, @account_id, @kind, 'pending', @currency, @amount_minor, @credit_amount, @now, @now)`,
      )
      .run({ id, account_id: input.accountId, kind: input.kind, currency: input.currency, amount_minor: input.amountMinor, credit_amount: input.creditAmount, now });
    return this.orderById(id)!;
  }

  private upsertProfile(accountId: string, changes: ProfileChanges): PaymentProfile {
    const now = Date.now();
    this.db.prepare<[string, number]>('INSERT INTO payment_profiles (account_id, updated_at) VALUES (?, ?) ON CONFLICT (account_id) DO NOTHING').run(accountId, now);
    const columns = profileColumns(changes, (at) => at.getTime(), (on) => (on ? 1 : 0));
    const params: Record<string, unknown> = { account_id: accountId, now };
    columns.forEach(([column, value]) => (params[column] = value));
    const sets = ['updated_at = @now', ...columns.map(([column]) => `${column} = @${column}`)];
    this.db.prepare<[Record<string, unknown>]>(`UPDATE payment_profiles SET ${sets.join(', ')} WHERE account_id = @account_id`).run(params);
    return toProfile(this.db.prepare<[string], ProfileRow>(`SELECT ${PROFILE_COLUMNS} FROM payment_profiles WHERE account_id = ?`).get(accountId)!);
  }

  /**
   * One of Stripe's events for an order, in one IMMEDIATE transaction: the order's facts and ledger
   * sums are read, `settle` says what moves, and the facts, the order's state and that one entry are
   * written together. A debit's source seen before moves nothing.
   */
  private async settleOrder(id: string, event: OrderEvent, contextOf: (order: PaymentOrder) => EventContext, receiptUrl?: string): Promise<SettledOrder | null> {
    const result = this.db
      .transaction((): SettledOrder | null => {
        const order = this.orderById(id);
        if (order === null) return null;
        const context = contextOf(order);
        if (this.db.prepare<[string], number>('SELECT 1 FROM debits WHERE source = ?').pluck().get(context.source) !== undefined) return { order, credit: null, debit: null, paidIn: false };
        const sums = this.db
          .prepare<[string, string], { kind: EntryKind; total: string }>(
            `SELECT kind, CAST(sum(amount) AS TEXT) AS total FROM credits WHERE order_id = ? GROUP BY kind
             UNION ALL SELECT kind, CAST(sum(amount) AS TEXT) AS total FROM debits WHERE order_id = ? GROUP BY kind`,
          )
          .all(id, id);
        const settlement = settle(factsOf(order), booksOf(order, sums.map((row) => ({ kind: row.kind, total: BigInt(row.total) }))), event);
        const now = Date.now();
        this.db
          .prepare<[Record<string, unknown>]>('UPDATE payment_orders SET refunded_minor = @refunded, disputes = @disputes, disputed = @disputed, updated_at = @now WHERE id = @id')
          .run({ id, refunded: settlement.facts.refundedMinor, disputes: disputesText(settlement.facts.disputes), disputed: settlement.facts.disputes.length > 0 ? 1 : 0, now });
        if (event.type === 'disputed') this.upsertProfile(order.accountId, { flaggedAt: new Date(now), flagReason: context.reason ?? null, autoRecharge: false });
        const entry = settlement.move === null ? null : entryOf(order, settlement.move, event, context);
        const credit = entry !== null && 'credit' in entry ? entry.credit : null;
        const debit = entry !== null && 'debit' in entry ? entry.debit : null;
        if (credit !== null) this.insertCredit(credit, id);
        if (debit !== null) this.insertDebit(debit);
        if (settlement.payIn) {
          // The guard: only the transaction that finds the order unpaid gets here, and it marks it paid.
          const claimed = this.db
            .prepare<[Record<string, unknown>]>(
              `UPDATE payment_orders SET status = 'paid', credit_id = @credit, error = NULL, updated_at = @now,
                 payment_intent_id = COALESCE(@pi, payment_intent_id), receipt_url = COALESCE(@receipt, receipt_url)
               WHERE id = @id AND status <> 'paid'`,
            )
            .run({ credit: credit?.id ?? null, now, pi: context.paymentIntentId, receipt: receiptUrl ?? null, id });
          if (claimed.changes === 0) throw new Error(`order ${id} was credited concurrently`);
        }
        return { order: this.orderById(id)!, credit, debit, paidIn: settlement.payIn };
      })
      .immediate();
    if (result !== null && (result.credit !== null || result.debit !== null)) this.fundsMoved();
    return result;
  }

  private insertCredit(credit: PaymentCredit, orderId: string): void {
    this.db
      .prepare<[Record<string, unknown>]>(
        `INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at, order_id)
         VALUES (@id, @account_id, @amount, @kind, @actor, @note, @created_at, @order_id)`,
      )
      .run({ id: credit.id, account_id: credit.accountId, amount: credit.amount, kind: credit.kind, actor: credit.actor, note: credit.note, created_at: credit.createdAt.getTime(), order_id: orderId });
    this.db.prepare<[bigint, string]>('UPDATE accounts SET balance = balance + ? WHERE id = ?').run(credit.amount, credit.accountId);
  }

  private insertDebit(debit: PaymentDebit): void {
    this.db
      .prepare<[Record<string, unknown>]>(
        `INSERT INTO debits (id, account_id, amount, kind, order_id, source, note, actor, created_at)
         VALUES (@id, @account_id, @amount, @kind, @order_id, @source, @note, @actor, @created_at)`,
      )
      .run({
        id: debit.id,
        account_id: debit.accountId,
        amount: debit.amount,
        kind: debit.kind,
        order_id: debit.orderId,
        source: debit.source,
        note: debit.note,
        actor: debit.actor,
        created_at: debit.createdAt.getTime(),
      });
    this.db.prepare<[bigint, string]>('UPDATE accounts SET balance = balance - ? WHERE id = ?').run(debit.amount, debit.accountId);
  }
}
