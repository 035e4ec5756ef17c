// /console/payments — the account's card payments with their receipts, and where Stripe sends the
// browser back after paying (?order=…): the order is shown until its webhook has credited it.
import { apiGet } from '../api.js';
import { h } from '../dom.js';
import { loadInto } from '../load.js';
import { formatMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { debitTable, paymentTable } from '../payments.js';
import { statusLine } from '../status.js';
import type { AccountSummary, Payment, PaymentDebit } from '../types.js';
import { pageHeading, section } from '../ui.js';

/** How long the page waits for Stripe's webhook after the browser came back. */
const RETURN_WAIT_MS = 30_000;
const RETURN_POLL_MS = 1000;

interface PaymentsAnswer {
  payments: Payment[];
  debits: PaymentDebit[];
  flagged: boolean;
}

async function waitForCredit(context: PageContext, orderId: string, show: (message: string, tone: 'info' | 'success' | 'error') => void): Promise<void> {
  const deadline = Date.now() + RETURN_WAIT_MS;
  for (;;) {
    const { payment } = await apiGet<{ payment: Payment }>(`/api/payments/${encodeURIComponent(orderId)}`, { signal: context.signal });
    if (payment.status === 'paid') {
      const account = await apiGet<AccountSummary>('/api/account', { signal: context.signal });
      show(`Payment received: ${formatMoney(payment.credit)} added. Your balance is now ${formatMoney(account.balance)}.`, 'success');
      return;
    }
    if (payment.status !== 'pending') {
      show(`The payment ${payment.status === 'expired' ? 'expired' : 'failed'}${payment.error ? `: ${payment.error}` : '.'} Nothing was added.`, 'error');
      return;
    }
    if (Date.now() > deadline) {
      show('Stripe has not confirmed the payment yet. It is added as soon as it does; this page shows it then.', 'info');
      return;
    }
    show('Waiting for Stripe to confirm the payment…', 'info');
    await new Promise((resolve) => setTimeout(resolve, RETURN_POLL_MS));
  }
}

export const paymentsPage: Page = {
  title: 'Payments',
  render(context: PageContext) {
    const list = h('div');
    const status = statusLine();
    const refresh = () => loadInto(list,
      () => apiGet<PaymentsAnswer>('/api/payments', { signal: context.signal }),
      (data) => h('div', null,
        data.flagged ? h('p', { class: 'form-error' }, 'A payment of this account is disputed; the operator may contact you.') : null,
        paymentTable(data.payments, { caption: 'Card payments', testId: 'payments-table' }),
        data.debits.length > 0 ? debitTable(data.debits) : null));
    context.root.append(
      pageHeading('Payments', 'Card payments to your balance, with Stripe\'s receipts.'),
      h('div', { 'data-testid': 'payment-return' }, status.element),
      section('History', list));
    const orderId = context.query.get('order');
    if (orderId) {
      void waitForCredit(context, orderId, (message, tone) => status.show(message, tone)).then(refresh).catch(() => undefined);
    }
    void refresh();
  },
};
