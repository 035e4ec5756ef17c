// The transfers table, used by Top Up's Move credit section.
import { dataTable } from './table.js';
import type { Transfer } from './types.js';
import { money, timeEl } from './ui.js';

export function transferTable(transfers: readonly Transfer[], accountName: string): HTMLElement {
  return dataTable({
    caption: `Transfers of ${accountName}, newest first`,
    rows: transfers,
    emptyText: 'No transfers yet.',
    testId: 'transfer-table',
    columns: [
      { label: 'Date', cell: (transfer) => timeEl(transfer.created_at) },
      { label: 'From', cell: (transfer) => transfer.from_account_name ?? transfer.from_account_id },
      { label: 'To', cell: (transfer) => transfer.to_account_name ?? transfer.to_account_id },
      { label: 'Amount', cell: (transfer) => money(transfer.amount), numeric: true },
      { label: 'Note', cell: (transfer) => transfer.note ?? '' },
      { label: 'By', cell: (transfer) => transfer.actor ?? '—' },
    ],
  });
}
