// /console/topup — redeem a code, and the history of credits to the account.
import { apiGet, apiPost } from '../api.js';
import { creditTable } from '../credits.js';
import { h, replace } from '../dom.js';
import { createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import { formatMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { statusLine } from '../status.js';
import type { AccountSummary, Credit, PaymentOptions } from '../types.js';
import { moveCreditSection } from './move-credit.js';
import { autoRechargeSection, cardSection } from './topup-card.js';
import { pageHeading, section, totalMoney } from '../ui.js';

const HISTORY_LIMIT = 50;

function showBalance(target: HTMLElement, balance: string): void {
  replace(target, 'Your balance: ', totalMoney(balance, 'topup-balance-value'));
}

export const topupPage: Page = {
  title: 'Top Up',
  render(context: PageContext) {
    const history = h('div');
    const status = statusLine();
    const refreshHistory = () => loadInto(history,
      () => apiGet<{ credits: Credit[] }>(`/api/credits?limit=${HISTORY_LIMIT}`, { signal: context.signal }),
      (data) => creditTable(data.credits));

    const form = createForm({
      label: 'Redeem a code',
      submitLabel: 'Redeem',
      // Unknown, used and expired codes come back without a field: they are still about the code.
      fallbackField: 'code',
      fields: [inputField({
        name: 'code',
        label: 'Redemption code',
        required: true,
        hint: 'Codes look like tg-… and can be used once.',
        attrs: { autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' },
      })],
      async onSubmit(form) {
        status.clear();
        const result = await apiPost<{ credit: Credit; balance: string }>('/api/topup/redeem', { code: valueOf(form, 'code') });
        form.reset();
        status.show(`Redeemed ${formatMoney(result.credit.amount)}. Your balance is now ${formatMoney(result.balance)}.`, 'success');
        showBalance(balance, result.balance);
        void refreshHistory();
      },
    });

    const card = h('div');
    const balance = h('p', { class: 'topup-balance', 'data-testid': 'topup-balance' });
    context.root.append(
      pageHeading('Top Up', 'Add credit to your balance by card or with a redemption code.'),
      balance,
      card,
      section('Redeem a code', form, status.element),
      moveCreditSection(context, (value) => showBalance(balance, value)),
      section('Credit history', history));
    void refreshHistory();
    void apiGet<AccountSummary>('/api/account', { signal: context.signal }).then((summary) => showBalance(balance, summary.balance), () => undefined);
    // Card payments appear only when the operator set up Stripe.
    void apiGet<PaymentOptions>('/api/payments/options', { signal: context.signal }).then((options) => {
      if (!options.enabled) return;
      const cancelled = context.query.get('cancelled');
      card.append(
        cancelled ? h('p', { class: 'hint' }, 'The payment was cancelled; nothing was charged.') : '',
        cardSection(options),
        autoRechargeSection(context, options.currency ?? ''));
    }).catch(() => undefined);
  },
};
