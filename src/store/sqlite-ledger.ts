/**
 * The ledger half of the SQLite store: holds, charges, credits and redemption codes. Each operation
 * is one transaction on the single writer, so "check the balance, then take from it" can never
 * interleave with another request's: the hold's figures are read, judged by the admission rule
 * (`src/money/admission.ts`) and written in one transaction.
 *
 * Money columns are read with CAST(… AS TEXT) and turned into bigints, so no amount ever passes
 * through a JS number.
 */
import { randomBytes } from 'node:crypto';
import { redemptionVerdict } from '../money/redemption';
import { memberOfBudget } from './budget-owner';
import type { SqliteDatabase, SqliteTransaction } from './sqlite-driver';
import type {
  AccountBalance,
  BudgetScope,
  SessionScope,
  ChargeFilter,
  ChargeTotals,
  ChargeRecord,
  CreditRecord,
  DailyUsage,
  Hold,
  HoldResult,
  KeyActivity,
  KeySpend,
  LedgerTotals,
  NewCredit,
  RedeemResult,
  RedemptionCodeRecord,
  UsageSummaryQuery,
  UsageSummaryRow,
} from './store';
import { admit } from '../money/admission';
import { heldSession } from './held-session';
import { chargeOrder, chargeTotalsSql, chargeWhere, type ChargeTotalsRow } from './charge-filter';
import { summarySql, toSummaryRow, type SummaryDialect, type SummarySqlRow } from './usage-queries';
import { CHARGE_COLUMNS, chargeParams, chargeSelectList, chargeValues, rowMappers, SQLITE_CODEC, toLedgerTotals, type ChargeRow, type CodeRow, type CreditRow, type SqliteColumns, type TotalsRow } from './rows';

const CHARGE_SELECT = chargeSelectList((column) => `CAST(${column} AS TEXT) AS ${column}`);
const CREDIT_COLUMNS = 'id, account_id, CAST(amount AS TEXT) AS amount, kind, actor, note, created_at';
const CODE_COLUMNS = 'id, CAST(amount AS TEXT) AS amount, created_at, created_by, expires_at, redeemed_by, redeemed_at';

function newId(prefix: 'cr_' | 'rc_'): string {
  return prefix + randomBytes(8).toString('hex');
}

const { toCharge, toCredit, toCode } = rowMappers(SQLITE_CODEC);

const toMillis = (at: Date): number => at.getTime();

/** What a batch of charges moves on one account or key: charged (balance, spent) and un-held. */
interface Moves {
  charged: bigint;
  unheld: bigint;
}

function movesOf(moves: Map<string, Moves>, id: string): Moves {
  let found = moves.get(id);
  if (found === undefined) moves.set(id, (found = { charged: 0n, unheld: 0n }));
  return found;
}

/** How the shared summary SQL reads in SQLite (exported for the query-plan test). */
export const SUMMARY_DIALECT: SummaryDialect<number> = {
  day: 'created_at / 86400000',
  models: 'group_concat(DISTINCT model)',
  text: (expression) => `CAST(COALESCE(${expression}, 0) AS TEXT)`,
  param: (name) => `@${name}`,
  date: (value) => value.getTime(),
};

function prepare(db: SqliteDatabase) {
  return {
    holdAccount: db.prepare<[bigint, string]>('UPDATE accounts SET held = held + ? WHERE id = ?'),
    holdKey: db.prepare<[bigint, string]>('UPDATE api_keys SET held = held + ? WHERE id = ?'),
    accountAvailable: db.prepare<[string], string>('SELECT CAST(balance - held AS TEXT) FROM accounts WHERE id = ?').pluck(),
    keyLeft: db.prepare<[string], { left: string | null }>('SELECT CAST(spend_limit - spent - held AS TEXT) AS left FROM api_keys WHERE id = ?'),
    keySpend: db.prepare<[string], { spend_limit: string | null; spent: string }>(
      'SELECT CAST(spend_limit AS TEXT) AS spend_limit, CAST(spent AS TEXT) AS spent FROM api_keys WHERE id = ?',
    ),
    accountSpendSince: db.prepare<[string, number, number], string>(
      'SELECT CAST(COALESCE(sum(cost), 0) AS TEXT) FROM charges WHERE account_id = ? AND created_at >= ? AND created_at < ?',
    ).pluck(),
    keySpendSince: db.prepare<[string, number, number], string>(
      'SELECT CAST(COALESCE(sum(cost), 0) AS TEXT) FROM charges WHERE key_id = ? AND created_at >= ? AND created_at < ?',
    ).pluck(),
    // On charges_member_time (account_id, member_account_id, created_at).
    memberSpendSince: db.prepare<[string, string, number, number], string>(
      'SELECT CAST(COALESCE(sum(cost), 0) AS TEXT) FROM charges WHERE account_id = ? AND member_account_id = ? AND created_at >= ? AND created_at < ?',
    ).pluck(),
    memberHeld: db.prepare<[string, string], string>('SELECT CAST(COALESCE(sum(amount), 0) AS TEXT) FROM holds WHERE account_id = ? AND member_account_id = ?').pluck(),
    accountSessionSpend: db.prepare<[string, string], string>(
      'SELECT CAST(COALESCE(sum(cost), 0) AS TEXT) FROM charges WHERE account_id = ? AND session_id = ?',
    ).pluck(),
    keySessionSpend: db.prepare<[string, string], string>('SELECT CAST(COALESCE(sum(cost), 0) AS TEXT) FROM charges WHERE key_id = ? AND session_id = ?').pluck(),
    accountSessionHeld: db.prepare<[string, string], string>(
      'SELECT CAST(COALESCE(sum(amount), 0) AS TEXT) FROM holds WHERE account_id = ? AND session_id = ?',
    ).pluck(),
    keySessionHeld: db.prepare<[string, string], string>('SELECT CAST(COALESCE(sum(amount), 0) AS TEXT) FROM holds WHERE key_id = ? AND session_id = ?').pluck(),
    accountHeld: db.prepare<[string], string>('SELECT CAST(held AS TEXT) FROM accounts WHERE id = ?').pluck(),
    keyHeld: db.prepare<[string], string>('SELECT CAST(held AS TEXT) FROM api_keys WHERE id = ?').pluck(),
    insertHold: db.prepare<[string, string, string, bigint, number, number, string | null, string | null]>(
      'INSERT INTO holds (request_id, account_id, key_id, amount, created_at, expires_at, session_id, member_account_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    holdOf: db.prepare<[string], { account_id: string; key_id: string; amount: string }>(
      'SELECT account_id, key_id, CAST(amount AS TEXT) AS amount FROM holds WHERE request_id = ?',
    ),
    deleteHold: db.prepare<[string]>('DELETE FROM holds WHERE request_id = ?'),
    takeHold: db.prepare<[string], { account_id: string; key_id: string; amount: string }>(
      'DELETE FROM holds WHERE request_id = ? RETURNING account_id, key_id, CAST(amount AS TEXT) AS amount',
    ),
    anyHold: db.prepare<[], number>('SELECT EXISTS (SELECT 1 FROM holds)').pluck(),
    unholdAccount: db.prepare<[bigint, string]>('UPDATE accounts SET held = held - ? WHERE id = ?'),
    unholdKey: db.prepare<[bigint, string]>('UPDATE api_keys SET held = held - ? WHERE id = ?'),
    // Positional: binding 30-odd named parameters looks each one up by name on every row.
    insertCharge: db.prepare<unknown[]>(
      `INSERT INTO charges (${CHARGE_COLUMNS.join(', ')}) VALUES (${CHARGE_COLUMNS.map(() => '?').join(', ')})
       ON CONFLICT (request_id) DO NOTHING`,
    ),
    chargeAccount: db.prepare<[bigint, bigint, string]>('UPDATE accounts SET balance = balance - ?, held = held - ? WHERE id = ?'),
    chargeKey: db.prepare<[bigint, bigint, string]>('UPDATE api_keys SET spent = spent + ?, held = held - ? WHERE id = ?'),
    expiredHolds: db.prepare<[number, number], { request_id: string; account_id: string; key_id: string; amount: string; expires_at: number }>(
      `SELECT request_id, account_id, key_id, CAST(amount AS TEXT) AS amount, expires_at FROM holds
        WHERE expires_at < ? ORDER BY expires_at LIMIT ?`,
    ),
    insertCredit: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at)
       VALUES (@id, @account_id, @amount, @kind, @actor, @note, @created_at)`,
    ),
    creditAccount: db.prepare<[bigint, string]>('UPDATE accounts SET balance = balance + ? WHERE id = ?'),
    balance: db.prepare<[string], { balance: string; held: string }>(
      'SELECT CAST(balance AS TEXT) AS balance, CAST(held AS TEXT) AS held FROM accounts WHERE id = ?',
    ),
    // One index seek per account on charges_account_totals (account_id, created_at, …).
    lastRequests: db.prepare<[], { account_id: string; at: number }>('SELECT account_id, max(created_at) AS at FROM charges GROUP BY account_id'),
    dailyUsage: db.prepare<[{ account: string | null; since: number }], { day: string; requests: number; cost: string }>(
      `SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, count(*) AS requests, CAST(sum(cost) AS TEXT) AS cost
         FROM charges WHERE (@account IS NULL OR account_id = @account) AND created_at >= @since
        GROUP BY day ORDER BY day`,
    ),
    chargeById: db.prepare<[string], ChargeRow<SqliteColumns>>(`SELECT ${CHARGE_SELECT} FROM charges WHERE request_id = ?`),
    // Per key through charges_key_time: a lookup each, however many charges the account has.
    keyActivity: db.prepare<[{ account: string; day: number; month: number }], { key_id: string; last_used: number | null; today: string; month: string }>(
      `SELECT k.id AS key_id,
              (SELECT max(created_at) FROM charges c WHERE c.key_id = k.id) AS last_used,
              CAST(COALESCE((SELECT sum(cost) FROM charges c WHERE c.key_id = k.id AND c.created_at >= @day), 0) AS TEXT) AS today,
              CAST(COALESCE((SELECT sum(cost) FROM charges c WHERE c.key_id = k.id AND c.created_at >= @month), 0) AS TEXT) AS month
         FROM api_keys k WHERE k.account_id = @account`,
    ),
    creditsOf: db.prepare<[string, number], CreditRow<SqliteColumns>>(`SELECT ${CREDIT_COLUMNS} FROM credits WHERE account_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`),
    totals: db.prepare<[], TotalsRow>(
      `SELECT a.id AS account_id, a.name,
              CAST(COALESCE((SELECT sum(amount) FROM credits c WHERE c.account_id = a.id), 0) AS TEXT) AS credits,
              CAST(COALESCE((SELECT sum(cost) FROM charges g WHERE g.account_id = a.id), 0) AS TEXT) AS charges,
              CAST(COALESCE((SELECT sum(amount) FROM debits d WHERE d.account_id = a.id), 0) AS TEXT) AS debits,
              CAST(a.balance AS TEXT) AS balance, CAST(a.held AS TEXT) AS held,
              CAST(COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id), 0) AS TEXT) AS holds
         FROM accounts a ORDER BY a.created_at, a.rowid`,
    ),
    insertCode: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO redemption_codes (id, hash, amount, created_at, created_by, expires_at)
       VALUES (@id, @hash, @amount, @created_at, @created_by, @expires_at)`,
    ),
    codeByHash: db.prepare<[Buffer], CodeRow<SqliteColumns>>(`SELECT ${CODE_COLUMNS} FROM redemption_codes WHERE hash = ?`),
    claimCode: db.prepare<[string, number, string, string]>(
      'UPDATE redemption_codes SET redeemed_by = ?, redeemed_at = ?, credit_id = ? WHERE id = ? AND redeemed_at IS NULL',
    ),
    codes: db.prepare<[number], CodeRow<SqliteColumns>>(`SELECT ${CODE_COLUMNS} FROM redemption_codes ORDER BY created_at DESC, rowid DESC LIMIT ?`),
  };
}

export class SqliteLedger {
  private readonly sql: ReturnType<typeof prepare>;

  // Made once: a transaction made per call costs more than the statements of a small one.
  private readonly holdTransaction: SqliteTransaction<[Hold], HoldResult>;
  private readonly chargesTransaction: SqliteTransaction<[readonly ChargeRecord[]], number>;

  constructor(private readonly db: SqliteDatabase) {
    this.sql = prepare(db);
    this.holdTransaction = db.transaction((hold: Hold) => this.hold(hold));
    this.chargesTransaction = db.transaction((charges: readonly ChargeRecord[]) => this.insertCharges(charges));
  }

  keySpend(keyId: string): KeySpend | null {
    const row = this.sql.keySpend.get(keyId);
    return row === undefined ? null : { spendLimit: row.spend_limit === null ? null : BigInt(row.spend_limit), spent: BigInt(row.spent) };
  }

  periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): bigint {
    const [from, to] = [since.getTime(), until.getTime()];
    switch (scope) {
      case 'key':
        return BigInt(this.sql.keySpendSince.get(id, from, to) ?? '0');
      case 'member': {
        const { organisationId, memberAccountId } = memberOfBudget(id);
        return BigInt(this.sql.memberSpendSince.get(organisationId, memberAccountId, from, to) ?? '0');
      }
      case 'account':
        return BigInt(this.sql.accountSpendSince.get(id, from, to) ?? '0');
    }
  }

  /** What the scope's holds hold now: a key's and an account's are their rows' `held`, a member's the sum of their holds' rows. */
  private heldBy(scope: BudgetScope, id: string): bigint {
    switch (scope) {
      case 'key':
        return BigInt(this.sql.keyHeld.get(id) ?? '0');
      case 'member': {
        const { organisationId, memberAccountId } = memberOfBudget(id);
        return BigInt(this.sql.memberHeld.get(organisationId, memberAccountId) ?? '0');
      }
      case 'account':
        return BigInt(this.sql.accountHeld.get(id) ?? '0');
    }
  }

  sessionSpend(scope: SessionScope, id: string, sessionId: string): bigint {
    const statement = scope === 'account' ? this.sql.accountSessionSpend : this.sql.keySessionSpend;
    return BigInt(statement.get(id, sessionId) ?? '0');
  }

  holdFunds(hold: Hold): HoldResult {
    return this.holdTransaction.immediate(hold);
  }

  recordCharges(charges: readonly ChargeRecord[]): number {
    return this.chargesTransaction.immediate(charges);
  }

  /** The figures admission reads, read and held inside the one transaction the writer runs at a time. */
  private hold(hold: Hold): HoldResult {
    const available = this.sql.accountAvailable.get(hold.accountId);
    if (available === undefined) return { ok: false, reason: 'balance', available: 0n };
    const key = this.sql.keyLeft.get(hold.keyId);
    if (key === undefined) return { ok: false, reason: 'key_spend_limit', available: 0n };
    const budgets = (hold.budgets ?? []).map((budget) => ({
      budget,
      left: budget.amount - this.periodSpend(budget.scope, budget.id, budget.start, budget.end) - this.heldBy(budget.scope, budget.id),
    }));
    // A session's holds are the rows this rule recorded its session on (below).
    const sessionBudgets = (hold.sessionBudgets ?? []).map((budget) => {
      const held = (budget.scope === 'account' ? this.sql.accountSessionHeld : this.sql.keySessionHeld).get(budget.id, budget.sessionId) ?? '0';
      return { budget, spent: this.sessionSpend(budget.scope, budget.id, budget.sessionId), held: BigInt(held) };
    });
    const admission = admit(hold.amount, { balanceLeft: BigInt(available), keyLeft: key.left === null ? null : BigInt(key.left), budgets, sessionBudgets });
    if (!admission.ok) return admission;
    this.sql.holdAccount.run(hold.amount, hold.accountId);
    this.sql.holdKey.run(hold.amount, hold.keyId);
    this.sql.insertHold.run(hold.requestId, hold.accountId, hold.keyId, hold.amount, Date.now(), hold.expiresAt.getTime(), heldSession(hold), hold.memberAccountId ?? null);
    return { ok: true };
  }

  private insertCharges(charges: readonly ChargeRecord[]): number {
    // A book that holds in memory (LocalBook) leaves this table empty: one look per batch then
    // spares every charge its own lookup.
    const holdsStored = this.sql.anyHold.get() === 1;
    // Charged and un-held amounts summed per account and per key, then one UPDATE each: the same
    // totals in the same transaction, without row updates per charge.
    const byAccount = new Map<string, Moves>();
    const byKey = new Map<string, Moves>();
    let recorded = 0;
    for (const charge of charges) {
      if (holdsStored) {
        const hold = this.sql.takeHold.get(charge.requestId);
        if (hold !== undefined) {
          const amount = BigInt(hold.amount);
          movesOf(byAccount, hold.account_id).unheld += amount;
          movesOf(byKey, hold.key_id).unheld += amount;
        }
      }
      // The charge is recorded as billing priced it: a cost above the hold is overage the charge
      // itself records, and may take the balance below zero by that much, never by a race.
      const inserted = this.sql.insertCharge.run(...chargeValues(chargeParams<SqliteColumns>(charge, toMillis, Number))).changes > 0;
      if (!inserted) continue;
      recorded += 1;
      if (charge.cost > 0n) {
        movesOf(byAccount, charge.accountId).charged += charge.cost;
        movesOf(byKey, charge.keyId).charged += charge.cost;
      }
    }
    for (const [accountId, moves] of byAccount) this.sql.chargeAccount.run(moves.charged, moves.unheld, accountId);
    for (const [keyId, moves] of byKey) this.sql.chargeKey.run(moves.charged, moves.unheld, keyId);
    return recorded;
  }

  releaseHolds(requestIds: readonly string[]): number {
    return this.db.transaction(() => requestIds.filter((id) => this.removeHold(id) !== null).length).immediate();
  }

  expiredHolds(now: Date, limit: number): Hold[] {
    return this.sql.expiredHolds.all(now.getTime(), limit).map((row) => ({
      requestId: row.request_id,
      accountId: row.account_id,
      keyId: row.key_id,
      amount: BigInt(row.amount),
      expiresAt: new Date(row.expires_at),
    }));
  }

  credit(input: NewCredit): CreditRecord {
    if (input.amount <= 0n) throw new RangeError('a credit must be a positive amount');
    const record: CreditRecord = { ...input, id: newId('cr_'), createdAt: new Date() };
    this.db.transaction(() => this.insertCredit(record)).immediate();
    return record;
  }

  balance(accountId: string): AccountBalance {
    const row = this.sql.balance.get(accountId);
    if (row === undefined) throw new Error(`no account with id "${accountId}"`);
    return { balance: BigInt(row.balance), held: BigInt(row.held) };
  }

  listCharges(filter: ChargeFilter): ChargeRecord[] {
    const where = chargeWhere(filter, (date) => date.getTime(), () => '?');
    const sql = `SELECT ${CHARGE_SELECT} FROM charges ${where.sql} ORDER BY ${chargeOrder(filter, 'rowid')} LIMIT ? OFFSET ?`;
    return this.db.prepare<unknown[], ChargeRow<SqliteColumns>>(sql).all(...where.params, filter.limit ?? 100, filter.offset ?? 0).map(toCharge);
  }

  chargeTotals(filter: ChargeFilter): ChargeTotals {
    const where = chargeWhere({ ...filter, page: undefined }, (date) => date.getTime(), () => '?');
    const row = this.db.prepare<unknown[], ChargeTotalsRow>(chargeTotalsSql(where.sql, (expression) => `CAST(${expression} AS TEXT)`)).get(...where.params)!;
    return { requests: Number(row.requests), cost: BigInt(row.cost), failed: Number(row.failed) };
  }

  findCharge(requestId: string): ChargeRecord | null {
    const row = this.sql.chargeById.get(requestId);
    return row === undefined ? null : toCharge(row);
  }

  usageSummary(query: UsageSummaryQuery): UsageSummaryRow[] {
    const { sql, params } = summarySql(query, SUMMARY_DIALECT);
    return this.db
      .prepare<[Record<string, unknown>], SummarySqlRow<number>>(sql)
      .all(params)
      .map((row) => toSummaryRow(row, (ms) => new Date(ms), query.groupBy));
  }

  keyActivity(accountId: string, dayStart: Date, monthStart: Date): KeyActivity[] {
    return this.sql.keyActivity.all({ account: accountId, day: dayStart.getTime(), month: monthStart.getTime() }).map((row) => ({
      keyId: row.key_id,
      lastUsedAt: row.last_used === null ? null : new Date(row.last_used),
      spentToday: BigInt(row.today),
      spentMonth: BigInt(row.month),
    }));
  }

  dailyUsage(accountId: string | null, since: Date): DailyUsage[] {
    return this.sql.dailyUsage.all({ account: accountId, since: since.getTime() }).map((row) => ({ day: row.day, requests: row.requests, cost: BigInt(row.cost) }));
  }

  lastRequests(): Map<string, Date> {
    return new Map(this.sql.lastRequests.all().map((row) => [row.account_id, new Date(row.at)]));
  }

  listCredits(accountId: string, limit = 100): CreditRecord[] {
    return this.sql.creditsOf.all(accountId, limit).map(toCredit);
  }

  ledgerTotals(): LedgerTotals[] {
    return this.sql.totals.all().map(toLedgerTotals);
  }

  createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): RedemptionCodeRecord[] {
    if (input.amount <= 0n) throw new RangeError('a redemption code must be worth a positive amount');
    const now = Date.now();
    const rows = input.hashes.map((hash) => ({
      id: newId('rc_'),
      hash,
      amount: input.amount,
      created_at: now,
      created_by: input.createdBy,
      expires_at: input.expiresAt?.getTime() ?? null,
    }));
    this.db.transaction(() => rows.forEach((row) => this.sql.insertCode.run(row))).immediate();
    return rows.map((row) => toCode({ ...row, amount: String(row.amount), redeemed_by: null, redeemed_at: null }));
  }

  redeemCode(hash: Buffer, accountId: string, actor: string | null): RedeemResult {
    return this.db.transaction((): RedeemResult => {
      const row = this.sql.codeByHash.get(hash);
      const code = row === undefined ? null : toCode(row);
      const now = new Date();
      const verdict = redemptionVerdict(code, now);
      if (!verdict.ok) return verdict;
      const credit: CreditRecord = { id: newId('cr_'), accountId, amount: verdict.amount, kind: 'redemption', actor, note: verdict.note, createdAt: now };
      this.insertCredit(credit);
      // The claim is conditional too, though the write lock already serialises redemptions.
      if (this.sql.claimCode.run(accountId, credit.createdAt.getTime(), credit.id, verdict.codeId).changes === 0) {
        throw new Error('redemption code claimed concurrently');
      }
      return { ok: true, credit };
    }).immediate();
  }

  listRedemptionCodes(limit = 100): RedemptionCodeRecord[] {
    return this.sql.codes.all(limit).map(toCode);
  }

  /** Removes a hold and un-holds its amount; returns the amount, or null when there was no hold. */
  private removeHold(requestId: string): bigint | null {
    const hold = this.sql.holdOf.get(requestId);
    if (hold === undefined) return null;
    const amount = BigInt(hold.amount);
    this.sql.deleteHold.run(requestId);
    this.sql.unholdAccount.run(amount, hold.account_id);
    this.sql.unholdKey.run(amount, hold.key_id);
    return amount;
  }


  private insertCredit(record: CreditRecord): void {
    this.sql.insertCredit.run({
      id: record.id,
      account_id: record.accountId,
      amount: record.amount,
      kind: record.kind,
      actor: record.actor,
      note: record.note,
      created_at: record.createdAt.getTime(),
    });
    this.sql.creditAccount.run(record.amount, record.accountId);
  }
}
