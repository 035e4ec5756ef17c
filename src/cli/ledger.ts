/**
 * `tollgate ledger verify`: the stored balances checked against the ledger they summarise. Every
 * ledger write updates the account row in the same transaction, so any difference is a bug or a hand
 * edit, and worth a non-zero exit for a cron job to catch.
 */
import type { BalanceBook } from '../billing/book';
import type { BudgetDrift, LiveCopy } from '../billing/live-copy';
import { formatUnits } from '../billing/money';
import { scanOutboxes } from '../outbox/scan';
import { pidAlive } from '../process-alive';
import type { LedgerStore, LedgerTotals } from '../store/ledger-store';

/** What is wrong with one account's totals; empty when nothing is. */
function driftOf(totals: LedgerTotals): string[] {
  const problems: string[] = [];
  const expected = totals.credits - totals.charges - totals.debits;
  if (totals.balance !== expected) {
    // Debits (refunds, disputes of card payments) are named only where there are any.
    const debits = totals.debits === 0n ? '' : ` − debits ${formatUnits(totals.debits)}`;
    problems.push(
      `balance ${formatUnits(totals.balance)} but credits ${formatUnits(totals.credits)} − charges ${formatUnits(totals.charges)}${debits} = ${formatUnits(expected)} (off by ${formatUnits(totals.balance - expected)})`,
    );
  }
  if (totals.held !== totals.openHolds) {
    problems.push(`held ${formatUnits(totals.held)} but open holds total ${formatUnits(totals.openHolds)}`);
  }
  return problems;
}

/** Prints OK or DRIFT per account and a summary; returns how many accounts drifted. */
export async function verifyLedgerCommand(store: LedgerStore, out: (line: string) => void): Promise<{ accounts: number; drifted: number }> {
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

/**
 * Charges on their way to the ledger, not drift: what outboxes on this disk hold (a gateway draining
 * them, or a stopped one that writes them at its next start) and, with Redis, what instances that
 * stopped left in their outboxes elsewhere. Prints one OUTBOX line each; changes no exit code.
 */
export async function reportOutboxes(outboxPath: string, book: BalanceBook, out: (line: string) => void): Promise<void> {
  for (const holding of scanOutboxes(outboxPath)) {
    const who = holding.owner !== null && pidAlive(holding.owner) ? `gateway pid ${holding.owner} is draining them` : 'written when a gateway starts with this folder';
    out(`OUTBOX ${holding.dir}: ${holding.charges} charges (${formatUnits(holding.amount)}) not in the ledger yet; ${who}`);
  }
  for (const pending of (await book.liveCopy?.stoppedOutboxes()) ?? []) {
    out(`OUTBOX instance ${pending.instance} (${pending.where}), stopped: ${formatUnits(pending.amount)} on ${pending.accounts} accounts not in the ledger yet; written when it starts again (not counted as drift)`);
  }
}

/**
 * The live balances (Redis) against the ledger: each account's Redis balance plus the charges it took
 * that no instance has written yet must equal its ledger balance. A crash between the two, a hand
 * edit or a lost Redis write shows here. Prints DRIFT per account; returns how many drift. A book
 * without its own copy of the balances (the store's own, or an instance's memory) has nothing to check.
 */
export async function verifyLiveBalances(store: LedgerStore, book: BalanceBook, out: (line: string) => void): Promise<number> {
  const live = book.liveCopy;
  if (live === null) return 0;
  const drifts = await live.drift(await store.ledgerTotals());
  for (const drift of drifts) {
    out(
      `DRIFT  ${drift.accountName} (${drift.accountId}): live balance (with unwritten charges) ${formatUnits(drift.live)} but the ledger says ${formatUnits(drift.ledger)} (off by ${formatUnits(drift.live - drift.ledger)}); run tollgate ledger heal`,
    );
  }
  out(drifts.length === 0 ? 'live balances OK' : `live balances DRIFT: ${drifts.length} accounts differ from the ledger`);
  return drifts.length + (await verifyLiveBudgets(live, out));
}

function budgetLine(drift: BudgetDrift): string {
  return `${drift.scope} ${drift.id}, period from ${drift.start.toISOString()} to ${drift.end.toISOString()}`;
}

/**
 * The live period spends (Redis) against the ledger: each budget's spend less what live instances have
 * not written yet must be the ledger's charges in its period. Prints DRIFT per budget; returns how many.
 */
async function verifyLiveBudgets(live: LiveCopy, out: (line: string) => void): Promise<number> {
  const drifts = await live.budgetDrift();
  for (const drift of drifts) {
    out(
      `DRIFT  budget of ${budgetLine(drift)}: live period spend (less unwritten charges) ${formatUnits(drift.live)} but the ledger says ${formatUnits(drift.ledger)} (off by ${formatUnits(drift.live - drift.ledger)}); run tollgate ledger heal`,
    );
  }
  out(drifts.length === 0 ? 'live budget spends OK' : `live budget spends DRIFT: ${drifts.length} budgets differ from the ledger`);
  return drifts.length;
}

/**
 * Rebuilds the drifting live balances from the ledger (each is seeded again when next used). Holds
 * open on those accounts are forgotten by the live book, so run it when the gateway is quiet or
 * stopped. True when nothing drifts any more.
 */
export async function healLiveBalances(store: LedgerStore, book: BalanceBook, out: (line: string) => void): Promise<boolean> {
  const live = book.liveCopy;
  if (live === null) {
    out('nothing to heal: this configuration keeps no live balances apart from the ledger');
    return true;
  }
  const drifts = await live.drift(await store.ledgerTotals());
  await live.rebuild(drifts.map((drift) => drift.accountId));
  for (const drift of drifts) out(`HEALED ${drift.accountName} (${drift.accountId}): live balance rebuilt from the ledger (${formatUnits(drift.ledger)})`);
  out(`healed ${drifts.length} accounts`);
  const budgets = await live.budgetDrift();
  await live.rebuildBudgets(budgets);
  for (const drift of budgets) out(`HEALED budget of ${budgetLine(drift)}: live period spend rebuilt from the ledger (${formatUnits(drift.ledger)})`);
  if (budgets.length > 0) out(`healed ${budgets.length} budgets`);
  const left = await live.drift(await store.ledgerTotals());
  const budgetsLeft = await live.budgetDrift();
  return left.length === 0 && budgetsLeft.length === 0;
}
