/** A transfer as the management API shows it, with both accounts' names as they are now. */
import { formatUnits } from '../billing/money';
import type { TransferRecord } from '../store/transfers';

export function transferView(transfer: TransferRecord, names: ReadonlyMap<string, string | null>) {
  return {
    id: transfer.id,
    from_account_id: transfer.fromAccountId,
    from_account_name: names.get(transfer.fromAccountId) ?? null,
    to_account_id: transfer.toAccountId,
    to_account_name: names.get(transfer.toAccountId) ?? null,
    amount: formatUnits(transfer.amount),
    actor: transfer.actor,
    note: transfer.note,
    created_at: transfer.createdAt.toISOString(),
  };
}
