// The credit history table, used by Top Up.
import { h } from './dom.js';
import { dataTable } from './table.js';
import type { Credit } from './types.js';
import { money, timeEl } from './ui.js';

const KIND_LABELS: Record<Credit['kind'], string> = {
  topup: 'Top-up',
  redemption: 'Redemption code',
  admin: 'Added by an administrator',
  dispute_won: 'Dispute won: card payment given back',
};

export function creditTable(credits: readonly Credit[]): HTMLElement {
  return dataTable({
    caption: 'Credit history, newest first',
    hideCaption: true,
    rows: credits,
    emptyText: 'No credits yet.',
    testId: 'credit-table',
    columns: [
      { label: 'Date', cell: (credit) => timeEl(credit.created_at) },
      { label: 'Kind', cell: (credit) => KIND_LABELS[credit.kind] ?? credit.kind },
      { label: 'Amount', cell: (credit) => money(credit.amount), numeric: true },
      { label: 'Note', cell: (credit) => credit.note ?? '' },
      { label: 'By', cell: (credit) => credit.actor ?? h('span', { class: 'muted' }, '—') },
    ],
  });
}
