/** `tollgate account show`: one account at a glance, with its keys, recent requests and credits. */
import { keyStatus } from '../auth/issue-key';
import type { BalanceBook } from '../billing/book';
import { formatUnits } from '../billing/money';
import type { ApiKeyRecord, ChargeRecord, CreditRecord, Store } from '../store/store';
import { formatModels, formatSpendLimit } from './key-limits';
import { requireAccount } from './lookup';
import { formatTable } from './table';

const RECENT_REQUESTS = 10;
const RECENT_CREDITS = 5;

/** Seconds matter here: requests come many a minute. */
function formatSecond(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** A titled table, indented under its title; `none` when there are no rows. */
function section(title: string, header: readonly string[], rows: readonly (readonly string[])[], out: (line: string) => void): void {
  if (rows.length === 0) {
    out(`${title}: none`);
    return;
  }
  out(`${title}:`);
  for (const line of formatTable([header, ...rows])) out(`  ${line}`);
}

function keyRow(key: ApiKeyRecord, now: number): string[] {
  return [
    key.id,
    key.name ?? '-',
    `${key.prefix}…${key.last4}`,
    formatSpendLimit(key),
    formatUnits(key.spent),
    formatModels(key),
    keyStatus(key, now),
  ];
}

function chargeRow(charge: ChargeRecord): string[] {
  return [
    formatSecond(charge.createdAt),
    charge.model,
    String(charge.inputTokens),
    String(charge.cacheWriteTokens + charge.cacheWrite1hTokens),
    String(charge.cacheReadTokens),
    String(charge.outputTokens),
    formatUnits(charge.cost),
    charge.overage > 0n ? formatUnits(charge.overage) : charge.unbilled > 0n ? `unbilled ${formatUnits(charge.unbilled)}` : '-',
    charge.usageSource,
    `${charge.status} ${charge.outcome}`,
  ];
}

function creditRow(credit: CreditRecord): string[] {
  return [formatSecond(credit.createdAt), credit.kind, formatUnits(credit.amount), credit.actor ?? '-', credit.note ?? '-'];
}

/**
 * `account show NAME`: the account, its live balance and what is held (from the book, so a Redis
 * deployment shows what requests see), its keys, its last 10 requests and its last 5 credits.
 */
export async function showAccountCommand(
  store: Store,
  book: BalanceBook,
  name: string,
  out: (line: string) => void,
  now: Date = new Date(),
): Promise<void> {
  const account = await requireAccount(store, name);
  const [{ balance, held }, keys, charges, credits] = await Promise.all([
    book.balance(account.id),
    store.listKeys({ accountId: account.id }),
    store.listCharges({ accountId: account.id, limit: RECENT_REQUESTS }),
    store.listCredits(account.id, RECENT_CREDITS),
  ]);
  out(`account ${account.name}`);
  out(`  id        ${account.id}`);
  out(`  role      ${account.role}`);
  out(`  disabled  ${account.disabled ? 'yes' : 'no'}`);
  out(`  balance   ${formatUnits(balance)}`);
  out(`  held      ${formatUnits(held)}`);
  section('keys', ['ID', 'NAME', 'KEY', 'SPEND LIMIT', 'SPENT', 'MODELS', 'STATUS'], keys.map((key) => keyRow(key, now.getTime())), out);
  section(
    `last ${RECENT_REQUESTS} requests`,
    ['TIME', 'MODEL', 'INPUT', 'CACHE WRITE', 'CACHE READ', 'OUTPUT', 'COST', 'OVERAGE', 'USAGE', 'STATUS'],
    charges.map(chargeRow),
    out,
  );
  section(`last ${RECENT_CREDITS} credits`, ['TIME', 'KIND', 'AMOUNT', 'ACTOR', 'NOTE'], credits.map(creditRow), out);
}
