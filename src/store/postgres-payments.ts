/**
 * Card payments on PostgreSQL (see payments.ts). Every instance may receive the same webhook: the
 * order's row is locked (FOR UPDATE) before its guard column is read, so concurrent credits of one
 * order queue, and each later one finds it credited. Lock order: the order (or the profile), then
 * the account, which no other ledger transaction takes before an order.
 */
import type { Pool, PoolClient } from 'pg';
import { disputesText, parseDisputes, settle, type EntryKind, type OrderEvent } from '../money/card-orders';
import {
  adjustmentDebit,
  booksOf,
  entryOf,
  movementTotalsOf,
  factsOf,
  newPaymentId,
  profileColumns,
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
import { inTransaction } from './postgres-tx';

const ORDER_COLUMNS = `id, account_id, kind, status, currency, amount_minor, credit_amount, session_id, payment_intent_id, credit_id,
  refunded_minor, disputed, disputes, receipt_url, error, created_at, updated_at`;
const DEBIT_COLUMNS = 'id, account_id, amount, kind, order_id, source, note, actor, created_at';
const PROFILE_COLUMNS = `account_id, customer_id, payment_method_id, auto_recharge, threshold, recharge_minor, monthly_cap_minor, failures,
  last_error, needs_action, flagged_at, flag_reason, updated_at`;

interface OrderRow {
  id: string;
  account_id: string;
  kind: PaymentOrder['kind'];
  status: PaymentOrder['status'];
  currency: string;
  amount_minor: string;
  credit_amount: string;
  session_id: string | null;
  payment_intent_id: string | null;
  credit_id: string | null;
  refunded_minor: string;
  disputed: boolean;
  disputes: string;
  receipt_url: string | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
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
  created_at: Date;
}

interface ProfileRow {
  account_id: string;
  customer_id: string | null;
  payment_method_id: string | null;
  auto_recharge: boolean;
  threshold: string;
  recharge_minor: number;
  monthly_cap_minor: number;
  failures: number;
  last_error: string | null;
  needs_action: boolean;
  flagged_at: Date | null;
  flag_reason: string | null;
  updated_at: Date;
}

function toOrder(row: OrderRow): PaymentOrder {
  return {
    id: row.id,
    accountId: row.account_id,
    kind: row.kind,
    status: row.status,
    currency: row.currency,
    amountMinor: Number(row.amount_minor),
    creditAmount: BigInt(row.credit_amount),
    sessionId: row.session_id,
    paymentIntentId: row.payment_intent_id,
    creditId: row.credit_id,
    refundedMinor: Number(row.refunded_minor),
    disputed: row.disputed,
    disputes: parseDisputes(row.disputes),
    receiptUrl: row.receipt_url,
    error: row.error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
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
    createdAt: row.created_at,
  };
}

function toProfile(row: ProfileRow): PaymentProfile {
  return {
    accountId: row.account_id,
    customerId: row.customer_id,
    paymentMethodId: row.payment_method_id,
    autoRecharge: row.auto_recharge,
    threshold: BigInt(row.threshold),
    rechargeMinor: row.recharge_minor,
    monthlyCapMinor: row.monthly_cap_minor,
    failures: row.failures,
    lastError: row.last_error,
    needsAction: row.needs_action,
    flaggedAt: row.flagged_at,
    flagReason: row.flag_reason,
    updatedAt: row.updated_at,
  };
}

async function orderById(client: Pool | PoolClient, id: string, lock = false): Promise<PaymentOrder | null> {
  const { rows } = await client.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM payment_orders WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
  return rows.length === 0 ? null : toOrder(rows[0]);
}

async function insertOrder(client: PoolClient, input: NewOrder): Promise<PaymentOrder> {
  const now = new Date();
  const { rows } = await client.query<OrderRow>(
    `INSERT INTO payment_orders (id, account_id, kind, status, currency, amount_minor, credit_amount, created_at, updated_at)
     VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $7) RETURNING ${ORDER_COLUMNS}`,
    [newPaymentId('pay_'), input.accountId, input.kind, input.currency, input.amountMinor, String(input.creditAmount), now],
  );
  return toOrder(rows[0]);
}

async function upsertProfile(client: PoolClient, accountId: string, changes: ProfileChanges): Promise<PaymentProfile> {
  const now = new Date();
  await client.query('INSERT INTO payment_profiles (account_id, updated_at) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING', [accountId, now]);
  const columns = profileColumns(changes, (at) => at, (on) => on);
  const params: unknown[] = [accountId, now, ...columns.map(([, value]) => value)];
  const sets = ['updated_at = $2', ...columns.map(([column], index) => `${column} = $${index + 3}`)];
  const { rows } = await client.query<ProfileRow>(`UPDATE payment_profiles SET ${sets.join(', ')} WHERE account_id = $1 RETURNING ${PROFILE_COLUMNS}`, params);
  return toProfile(rows[0]);
}

export class PostgresPayments implements CardPaymentStore {
  constructor(private readonly pool: Pool) {}

  createOrder(input: NewOrder): Promise<PaymentOrder> {
    return inTransaction(this.pool, (client) => insertOrder(client, input));
  }

  createCheckoutOrder(input: Omit<NewOrder, 'kind'>, maxPending: number): Promise<PaymentOrder | { refused: 'pending_checkouts' }> {
    return inTransaction(this.pool, async (client): Promise<PaymentOrder | { refused: 'pending_checkouts' }> => {
      // The profile's row is the account's payments lock: concurrent checkouts queue here.
      await client.query('INSERT INTO payment_profiles (account_id, updated_at) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING', [input.accountId, new Date()]);
      await client.query('SELECT 1 FROM payment_profiles WHERE account_id = $1 FOR UPDATE', [input.accountId]);
      const { rows } = await client.query<{ pending: string }>(
        "SELECT count(*) AS pending FROM payment_orders WHERE account_id = $1 AND kind = 'checkout' AND status = 'pending'",
        [input.accountId],
      );
      if (Number(rows[0].pending) >= maxPending) return { refused: 'pending_checkouts' };
      return insertOrder(client, { ...input, kind: 'checkout' });
    });
  }

  createRechargeOrder(input: Omit<NewOrder, 'kind'>, monthStart: Date, capMinor: number): Promise<PaymentOrder | { refused: RechargeRefusal }> {
    return inTransaction(this.pool, async (client): Promise<PaymentOrder | { refused: RechargeRefusal }> => {
      // The profile's row is the account's auto-recharge lock: concurrent settles queue here.
      await client.query('INSERT INTO payment_profiles (account_id, updated_at) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING', [input.accountId, new Date()]);
      await client.query('SELECT 1 FROM payment_profiles WHERE account_id = $1 FOR UPDATE', [input.accountId]);
      const { rows } = await client.query<{ pending: string; spent: string }>(
        `SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
                COALESCE(sum(amount_minor) FILTER (WHERE status IN ('pending', 'paid') AND created_at >= $2), 0) AS spent
           FROM payment_orders WHERE account_id = $1 AND kind = 'auto_recharge'`,
        [input.accountId, monthStart],
      );
      if (Number(rows[0].pending) > 0) return { refused: 'in_flight' };
      if (Number(rows[0].spent) + input.amountMinor > capMinor) return { refused: 'monthly_cap' };
      return insertOrder(client, { ...input, kind: 'auto_recharge' });
    });
  }

  findOrder(id: string): Promise<PaymentOrder | null> {
    return orderById(this.pool, id);
  }

  async findOrderByPaymentIntent(paymentIntentId: string): Promise<PaymentOrder | null> {
    const { rows } = await this.pool.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM payment_orders WHERE payment_intent_id = $1`, [paymentIntentId]);
    return rows.length === 0 ? null : toOrder(rows[0]);
  }

  async takeLease(name: string, holder: string, until: Date): Promise<boolean> {
    const result = await this.pool.query(
      `INSERT INTO payment_leases (name, holder, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE payment_leases.expires_at < $4 OR payment_leases.holder = excluded.holder`,
      [name, holder, until, new Date()],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async listOrders(filter: OrderFilter): Promise<PaymentOrder[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (condition: string, value: unknown) => {
      params.push(value);
      where.push(condition.replace('?', `$${params.length}`));
    };
    if (filter.accountId !== undefined) add('account_id = ?', filter.accountId);
    if (filter.status !== undefined) add('status = ?', filter.status);
    if (filter.kind !== undefined) add('kind = ?', filter.kind);
    if (filter.createdBefore !== undefined) add('created_at < ?', filter.createdBefore);
    params.push(filter.limit ?? 100);
    const { rows } = await this.pool.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM payment_orders ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, seq DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toOrder);
  }

  updateOrder(id: string, update: OrderUpdate): Promise<PaymentOrder | null> {
    return inTransaction(this.pool, async (client) => {
      const order = await orderById(client, id, true);
      if (order === null) return null;
      const params: unknown[] = [id, new Date()];
      const sets = ['updated_at = $2'];
      const set = (column: string, value: unknown) => {
        params.push(value);
        sets.push(`${column} = $${params.length}`);
      };
      // A credited order stays paid whatever arrives after (an expiry, a late failure).
      if (update.status !== undefined && order.status !== 'paid') set('status', update.status);
      if (update.sessionId !== undefined) set('session_id', update.sessionId);
      if (update.paymentIntentId !== undefined) set('payment_intent_id', update.paymentIntentId);
      if (update.receiptUrl !== undefined) set('receipt_url', update.receiptUrl);
      if (update.error !== undefined) set('error', update.error);
      const { rows } = await client.query<OrderRow>(`UPDATE payment_orders SET ${sets.join(', ')} WHERE id = $1 RETURNING ${ORDER_COLUMNS}`, params);
      return toOrder(rows[0]);
    });
  }

  creditOrder(id: string, update: Pick<OrderUpdate, 'paymentIntentId' | 'receiptUrl'>): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'paid' }, (order) => ({ source: `${id}:paid`, paymentIntentId: update.paymentIntentId ?? order.paymentIntentId }), update.receiptUrl);
  }

  refundOrder(id: string, refundedMinor: number, source: string): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'refunded', refundedMinor }, (order) => ({ source, paymentIntentId: order.paymentIntentId }));
  }

  disputeOrder(id: string, disputedMinor: number, disputeId: string, reason: string): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'disputed', disputeId, amountMinor: disputedMinor }, (order) => ({ source: `${disputeId}:disputed:${disputedMinor}`, paymentIntentId: order.paymentIntentId, reason }));
  }

  disputeWon(id: string, disputedMinor: number, disputeId: string): Promise<SettledOrder | null> {
    return this.settleOrder(id, { type: 'dispute_won', disputeId, amountMinor: disputedMinor }, (order) => ({ source: `${disputeId}:won`, paymentIntentId: order.paymentIntentId }));
  }

  async claimEvent(id: string, type: string, now: Date, staleBefore: Date): Promise<EventClaim> {
    // The insert, or the takeover of a dead handler's claim, is one statement: one caller changes the row.
    const { rowCount } = await this.pool.query(
      `INSERT INTO payment_events (id, type, order_id, received_at, claimed_at, handled_at) VALUES ($1, $2, NULL, $3, $3, NULL)
       ON CONFLICT (id) DO UPDATE SET claimed_at = EXCLUDED.claimed_at
        WHERE payment_events.handled_at IS NULL AND payment_events.claimed_at < $4`,
      [id, type, now, staleBefore],
    );
    if (rowCount !== 0) return 'claimed';
    const { rows } = await this.pool.query<{ handled_at: Date | null }>('SELECT handled_at FROM payment_events WHERE id = $1', [id]);
    return rows[0]?.handled_at == null ? 'in_flight' : 'handled';
  }

  async finishEvent(id: string, orderId: string | null, at: Date): Promise<void> {
    await this.pool.query('UPDATE payment_events SET order_id = $2, handled_at = $3 WHERE id = $1', [id, orderId, at]);
  }

  async releaseEvent(id: string): Promise<void> {
    await this.pool.query('DELETE FROM payment_events WHERE id = $1 AND handled_at IS NULL', [id]);
  }

  async seenEvent(id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('SELECT 1 FROM payment_events WHERE id = $1', [id]);
    return (rowCount ?? 0) > 0;
  }

  async debitAccount(input: NewAdjustment): Promise<PaymentDebit> {
    const debit = adjustmentDebit(input);
    await inTransaction(this.pool, (client) => insertDebit(client, debit));
    return debit;
  }

  async movementTotals(since: Date, until: Date): Promise<MovementTotals> {
    const sums = async (table: 'credits' | 'debits') =>
      (await this.pool.query<{ kind: string; total: string }>(`SELECT kind, sum(amount)::text AS total FROM ${table} WHERE created_at >= $1 AND created_at < $2 GROUP BY kind`, [since, until])).rows;
    const [credits, debits] = await Promise.all([sums('credits'), sums('debits')]);
    return movementTotalsOf(credits, debits);
  }

  async listDebits(accountId: string | null, limit = 100): Promise<PaymentDebit[]> {
    const { rows } = await this.pool.query<DebitRow>(
      `SELECT ${DEBIT_COLUMNS} FROM debits WHERE ($1::text IS NULL OR account_id = $1) AND kind <> 'transfer' ORDER BY created_at DESC, seq DESC LIMIT $2`,
      [accountId, limit],
    );
    return rows.map(toDebit);
  }

  async profile(accountId: string): Promise<PaymentProfile | null> {
    const { rows } = await this.pool.query<ProfileRow>(`SELECT ${PROFILE_COLUMNS} FROM payment_profiles WHERE account_id = $1`, [accountId]);
    return rows.length === 0 ? null : toProfile(rows[0]);
  }

  saveProfile(accountId: string, changes: ProfileChanges): Promise<PaymentProfile> {
    return inTransaction(this.pool, (client) => upsertProfile(client, accountId, changes));
  }

  async listAutoRecharge(): Promise<PaymentProfile[]> {
    const { rows } = await this.pool.query<ProfileRow>(`SELECT ${PROFILE_COLUMNS} FROM payment_profiles WHERE auto_recharge`);
    return rows.map(toProfile);
  }

  /**
   * One of Stripe's events for an order, in one transaction with the order's row locked: its facts and
   * ledger sums are read, `settle` says what moves, and the facts, the order's state and that one
   * entry are written together. A debit's source seen before moves nothing.
   */
  private settleOrder(id: string, event: OrderEvent, contextOf: (order: PaymentOrder) => EventContext, receiptUrl?: string): Promise<SettledOrder | null> {
    return inTransaction(this.pool, async (client): Promise<SettledOrder | null> => {
      const order = await orderById(client, id, true);
      if (order === null) return null;
      const context = contextOf(order);
      if (((await client.query('SELECT 1 FROM debits WHERE source = $1', [context.source])).rowCount ?? 0) > 0) return { order, credit: null, debit: null, paidIn: false };
      const { rows: sums } = await client.query<{ kind: EntryKind; total: string }>(
        `SELECT kind, sum(amount) AS total FROM credits WHERE order_id = $1 GROUP BY kind
         UNION ALL SELECT kind, sum(amount) AS total FROM debits WHERE order_id = $1 GROUP BY kind`,
        [id],
      );
      const settlement = settle(factsOf(order), booksOf(order, sums.map((row) => ({ kind: row.kind, total: BigInt(row.total) }))), event);
      const now = new Date();
      await client.query('UPDATE payment_orders SET refunded_minor = $2, disputes = $3, disputed = $4, updated_at = $5 WHERE id = $1', [
        id,
        settlement.facts.refundedMinor,
        disputesText(settlement.facts.disputes),
        settlement.facts.disputes.length > 0,
        now,
      ]);
      if (event.type === 'disputed') await upsertProfile(client, order.accountId, { flaggedAt: now, flagReason: context.reason ?? null, autoRecharge: false });
      const entry = settlement.move === null ? null : entryOf(order, settlement.move, event, context);
      const credit = entry !== null && 'credit' in entry ? entry.credit : null;
      const debit = entry !== null && 'debit' in entry ? entry.debit : null;
      if (credit !== null) await insertCredit(client, credit, id);
      if (debit !== null) await insertDebit(client, debit);
      if (settlement.payIn) {
        const { rowCount } = await client.query(
          `UPDATE payment_orders SET status = 'paid', credit_id = $2, error = NULL, updated_at = $3,
             payment_intent_id = COALESCE($4, payment_intent_id), receipt_url = COALESCE($5, receipt_url)
           WHERE id = $1 AND status <> 'paid'`,
          [id, credit?.id ?? null, now, context.paymentIntentId, receiptUrl ?? null],
        );
        if (rowCount === 0) throw new Error(`order ${id} was credited concurrently`);
      }
      return { order: (await orderById(client, id))!, credit, debit, paidIn: settlement.payIn };
    });
  }
}

async function insertCredit(client: PoolClient, credit: PaymentCredit, orderId: string): Promise<void> {
  await client.query('INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at, order_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
    credit.id,
    credit.accountId,
    String(credit.amount),
    credit.kind,
    credit.actor,
    credit.note,
    credit.createdAt,
    orderId,
  ]);
  await client.query('UPDATE accounts SET balance = balance + $1::bigint WHERE id = $2', [String(credit.amount), credit.accountId]);
}

async function insertDebit(client: PoolClient, debit: PaymentDebit): Promise<void> {
  await client.query('INSERT INTO debits (id, account_id, amount, kind, order_id, source, note, actor, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
    debit.id,
    debit.accountId,
    String(debit.amount),
    debit.kind,
    debit.orderId,
    debit.source,
    debit.note,
    debit.actor,
    debit.createdAt,
  ]);
  await client.query('UPDATE accounts SET balance = balance - $1::bigint WHERE id = $2', [String(debit.amount), debit.accountId]);
}
