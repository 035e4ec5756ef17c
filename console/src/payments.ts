// Card payments as tables and badges, shared by Payments and Admin → Payments.
import { h } from './dom.js';
import { dataTable } from './table.js';
import type { Payment, PaymentDebit } from './types.js';
import { badge, money, timeEl, type BadgeTone } from './ui.js';

const STATUS_TONES: Record<Payment['status'], BadgeTone> = { paid: 'good', pending: 'neutral', failed: 'bad', expired: 'warn' };

function paymentStatus(payment: Payment): HTMLElement {
  return h('span', null,
    badge(payment.status, STATUS_TONES[payment.status]),
    payment.disputed ? badge('disputed', 'bad') : null,
    payment.refunded !== '0.00' && payment.refunded !== '0' ? badge(`refunded ${payment.refunded}`, 'warn') : null);
}

export function paymentTable(payments: readonly Payment[], options: { caption: string; withAccount?: boolean; testId?: string }): HTMLElement {
  return dataTable<Payment>({
    caption: options.caption,
    testId: options.testId,
    rows: payments,
    emptyText: 'No card payments yet.',
    columns: [
      { label: 'Date', cell: (p) => timeEl(p.created_at) },
      ...(options.withAccount ? [{ label: 'Account', cell: (p: Payment) => named(p.account_name, p.account_id) }] : []),
      { label: 'Amount', numeric: true, cell: (p) => `${p.amount} ${p.currency.toUpperCase()}` },
      { label: 'Credit', numeric: true, cell: (p) => money(p.credit) },
      { label: 'Kind', cell: (p) => (p.kind === 'auto_recharge' ? 'Auto-recharge' : 'Top up') },
      { label: 'Status', cell: (p) => h('span', null, paymentStatus(p), p.error ? h('span', { class: 'hint' }, ` ${p.error}`) : null) },
      { label: 'Receipt', cell: (p) => (p.receipt_url ? h('a', { href: p.receipt_url, target: '_blank', rel: 'noopener noreferrer' }, 'Receipt') : '—') },
    ],
  });
}

/** An account's name with its id beside it (muted), or the id alone when no name came. */
export function named(name: string | null | undefined, id: string): HTMLElement {
  return h('span', null, name ? `${name} ` : '', h('code', { class: name ? 'muted' : '' }, id));
}

export function debitTable(debits: readonly PaymentDebit[], options: { withAccount?: boolean } = {}): HTMLElement {
  return dataTable<PaymentDebit>({
    caption: 'Refunds, disputes and adjustments',
    rows: debits,
    emptyText: 'No refunds, disputes or adjustments.',
    columns: [
      { label: 'Date', cell: (d) => timeEl(d.created_at) },
      ...(options.withAccount ? [{ label: 'Account', cell: (d: PaymentDebit) => named(d.account_name, d.account_id) }] : []),
      { label: 'Kind', cell: (d) => badge(d.kind, d.kind === 'dispute' ? 'bad' : 'warn') },
      { label: 'Taken back', numeric: true, cell: (d) => money(d.amount) },
      { label: 'Payment', cell: (d) => d.order_id ?? h('span', { title: d.note ?? '' }, `adjustment by ${d.actor}`) },
    ],
  });
}
