/**
 * `tollgate ledger verify`: the stored balances checked against the ledger they summarise. Every
 * ledger write updates the account row in the same transaction, so any difference is a bug or a hand
 * edit, and worth a non-zero exit for a cron job to catch.
 */
import { formatUnits } from '../billing/money';
import type { LedgerTotals, Store } from '../store/store';

/** What is wrong with one account's totals; empty when nothing is. */
function driftOf(totals: LedgerTotals): string[] {
  const problems: string[] = [];
  const expected = totals.credits - totals.charges;
  if (totals.balance !== expected) {
    problems.push(
      `balance ${formatUnits(totals.balance)} but credits ${formatUnits(totals.credits)} − charges ${formatUnits(totals.charges)} = ${formatUnits(expected)} (off by ${formatUnits(totals.balance - expected)})`,
    );
  }
  if (totals.held !== totals.openHolds) {
    problems.push(`held ${formatUnits(totals.held)} but open holds total ${formatUnits(totals.openHolds)}`);
  }
  return problems;
}

/** Prints OK or DRIFT per account and a summary; returns how many accounts drifted. */
export async function verifyLedgerCommand(store: Store, out: (line: string) => void): Promise<{ accounts: number; drifted: number }> {
  const all = await store.ledgerTotals();
  let drifted = 0;
  for (const totals of all) {
    const problems = driftOf(totals);
    if (problems.length === 0) {
      out(`OK     ${totals.accountName}: balance ${formatUnits(totals.balance)}, held ${formatUnits(totals.held)}`);
    } else {
      drifted += 1;
      out(`DRIFT  ${totals.accountName} (${totals.accountId}): ${problems.join('; ')}`);
    }
  }
  out(drifted === 0 ? `ledger OK: ${all.length} accounts checked` : `ledger DRIFT: ${drifted} of ${all.length} accounts differ from their ledger`);
  return { accounts: all.length, drifted };
}
