// /console/admin/payments — every account's card payments, refunds and disputes, filtered by account
// and status, and a button that looks every pending payment up in Stripe now.
import { apiGet, apiPost, withQuery } from '../api.js';
import { h } from '../dom.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { debitTable, paymentTable } from '../payments.js';
import { statusLine } from '../status.js';
import type { Payment, PaymentDebit } from '../types.js';
import { pageHeading, section } from '../ui.js';

interface ReconcileSummary {
  checked: number;
  credited: number;
  expired: number;
  failed: number;
  pending: number;
  errors: string[];
}

export const adminPaymentsPage: Page = {
  title: 'Payments',
  admin: true,
  render(context: PageContext) {
    const list = h('div');
    const status = statusLine();
    let filter = { account: '', status: '' };
    const refresh = () => loadInto(list,
      () => apiGet<{ payments: Payment[]; debits: PaymentDebit[] }>(withQuery('/api/admin/payments', { account: filter.account || undefined, status: filter.status || undefined }), { signal: context.signal }),
      (data) => h('div', null, paymentTable(data.payments, { caption: 'Card payments', withAccount: true, testId: 'admin-payments-table' }), debitTable(data.debits, { withAccount: true })));
    const filters = createForm({
      label: 'Filter payments',
      submitLabel: 'Show',
      className: 'form form-inline',
      fields: [
        inputField({ name: 'account', label: 'Account (name or id)' }),
        selectField({ name: 'status', label: 'Status', options: ['', 'pending', 'paid', 'failed', 'expired'].map((value) => ({ value, label: value || 'any' })) }),
      ],
      async onSubmit(form) {
        filter = { account: valueOf(form, 'account'), status: valueOf(form, 'status') };
        await refresh();
      },
    });
    const reconcile = createForm({
      label: 'Reconcile with Stripe',
      submitLabel: 'Look up pending payments in Stripe',
      fields: [],
      async onSubmit() {
        const summary = await apiPost<ReconcileSummary>('/api/admin/payments/reconcile', {});
        status.show(`Checked ${summary.checked}: ${summary.credited} credited, ${summary.failed} failed, ${summary.expired} expired, ${summary.pending} still pending${summary.errors.length > 0 ? `; ${summary.errors.length} could not be looked up` : ''}.`, summary.errors.length > 0 ? 'error' : 'success');
        await refresh();
      },
    });
    context.root.append(
      pageHeading('Payments', 'Card payments of every account, with refunds and disputes.'),
      section('Reconcile', reconcile, status.element),
      section('Filter', filters),
      section('All payments', list));
    void refresh();
  },
};
