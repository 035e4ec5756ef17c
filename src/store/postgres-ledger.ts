/**
 * The ledger half of the PostgreSQL store: holds, charges, credits and redemption codes, with the
 * semantics of the SQLite ledger. Many instances share the database, so every "check, then take" is a
 * conditional UPDATE: under READ COMMITTED a concurrent writer waits for the row lock and then
 * re-evaluates the condition against the committed row, so two requests can never both spend the
 * same funds.
 *
 * The hot paths cost a fixed number of round trips, whatever the batch size: a hold is one call to a
 * SQL function (`postgres-holds.ts`), and a batch of charges is one transaction of set-based
 * statements over arrays (`postgres-charges.ts`). Every transaction that moves funds takes its row
 * locks in one order (`postgres-locks.ts`) and runs again after a deadlock (`postgres-tx.ts`).
 *
 * pg returns BIGINT and sums as strings and every amount is sent as a string, so no amount ever passes
 * through a JS number.
 */
import type { Pool } from 'pg';
import type {
  AccountBalance,
  BudgetScope,
  SessionScope,
  ChargeFilter,
  ChargeTotals,
  ChargeRecord,
  CreditRecord,
  Hold,
  HoldResult,
  KeySpend,
  LedgerTotals,
  NewCredit,
  RedeemResult,
  RedemptionCodeRecord,
} from './store';
import { recordCharges } from './postgres-charges';
import { addCredit, createRedemptionCodes, listCredits, listRedemptionCodes, redeemCode } from './postgres-credits';
import { expiredHolds, holdFunds, releaseHolds } from './postgres-holds';
import { balance, chargeTotals, ledgerTotals, listCharges } from './postgres-reads';
import { keySpend, periodSpend, sessionSpend } from './postgres-spend';

export class PostgresLedger {
  constructor(private readonly pool: Pool) {}

  keySpend(keyId: string): Promise<KeySpend | null> {
    return keySpend(this.pool, keyId);
  }

  periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
    return periodSpend(this.pool, scope, id, since, until);
  }

  sessionSpend(scope: SessionScope, id: string, sessionId: string): Promise<bigint> {
    return sessionSpend(this.pool, scope, id, sessionId);
  }

  holdFunds(hold: Hold): Promise<HoldResult> {
    return holdFunds(this.pool, hold);
  }

  recordCharges(charges: readonly ChargeRecord[]): Promise<number> {
    return recordCharges(this.pool, charges);
  }

  releaseHolds(requestIds: readonly string[]): Promise<number> {
    return releaseHolds(this.pool, requestIds);
  }

  expiredHolds(now: Date, limit: number): Promise<Hold[]> {
    return expiredHolds(this.pool, now, limit);
  }

  credit(input: NewCredit): Promise<CreditRecord> {
    return addCredit(this.pool, input);
  }

  balance(accountId: string): Promise<AccountBalance> {
    return balance(this.pool, accountId);
  }

  listCharges(filter: ChargeFilter): Promise<ChargeRecord[]> {
    return listCharges(this.pool, filter);
  }

  chargeTotals(filter: ChargeFilter): Promise<ChargeTotals> {
    return chargeTotals(this.pool, filter);
  }

  listCredits(accountId: string, limit?: number): Promise<CreditRecord[]> {
    return listCredits(this.pool, accountId, limit);
  }

  ledgerTotals(): Promise<LedgerTotals[]> {
    return ledgerTotals(this.pool);
  }

  createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]> {
    return createRedemptionCodes(this.pool, input);
  }

  redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    return redeemCode(this.pool, hash, accountId, actor);
  }

  listRedemptionCodes(limit?: number): Promise<RedemptionCodeRecord[]> {
    return listRedemptionCodes(this.pool, limit);
  }
}
