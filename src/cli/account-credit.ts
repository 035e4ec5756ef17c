/** `tollgate account credit`: adds funds by hand, through the book so a live balance in Redis moves too. */
import type { BalanceBook } from '../billing/book';
import { formatUnits } from '../billing/money';
import type { CreditRecord, Store } from '../store/store';
import { parsePositiveAmount } from './amount';
import { requireAccount } from './lookup';

/** A note is kept in the ledger and shown in one table cell: printable, one line, at most 200 characters. */
const NOTE_PATTERN = /^[^\u0000-\u001f\u007f]{1,200}$/;

/**
 * `account credit NAME AMOUNT --note TEXT`: records an `admin` credit and prints it with the new live
 * balance. The note is required: a hand-made credit with no reason is what an audit asks about.
 */
export async function creditAccountCommand(
  store: Store,
  book: BalanceBook,
  input: { account: string; amount: string; note: string | undefined; actor: string },
  out: (line: string) => void,
): Promise<CreditRecord> {
  const amount = parsePositiveAmount(input.amount, 'amount');
  const note = input.note?.trim() ?? '';
  if (!NOTE_PATTERN.test(note)) throw new Error('a note is required: --note TEXT (1-200 printable characters on one line)');
  const account = await requireAccount(store, input.account);
  const credit = await book.credit({ accountId: account.id, amount, kind: 'admin', actor: input.actor, note });
  const { balance } = await book.balance(account.id);
  out(`credited ${formatUnits(amount)} to ${account.name} (${credit.id}); balance now ${formatUnits(balance)}`);
  return credit;
}
