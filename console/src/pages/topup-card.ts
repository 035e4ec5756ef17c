// Top Up's card part: presets and a custom amount paid through Stripe Checkout, and the
// auto-recharge settings. The server prices every checkout from the amount alone; the browser only
// says how much, in the currency's minor units (a preset) or as typed ("10.50").
import { apiGet, apiPost, apiPut, errorMessage } from '../api.js';
import { h } from '../dom.js';
import { checkedValues, createForm, inputField, valueOf } from '../forms.js';
import { formatMoney } from '../money.js';
import type { PageContext } from '../page.js';
import { statusLine, type StatusLine } from '../status.js';
import type { AutoRechargeSettings, PaymentOptions } from '../types.js';
import { buttonRow, section } from '../ui.js';

async function startCheckout(amount: number | string, saveCard: boolean): Promise<void> {
  const { url } = await apiPost<{ url: string }>('/api/payments/checkout', { amount, save_card: saveCard });
  window.location.assign(url);
}

export function cardSection(options: PaymentOptions): HTMLElement {
  const currency = (options.currency ?? '').toUpperCase();
  const status = statusLine();
  const keepCard = h('input', { type: 'checkbox', name: 'save_card', value: 'yes', 'data-testid': 'save-card' });
  const presets = (options.presets ?? []).map((preset) => {
    const button = h('button', { type: 'button', class: 'button', 'data-testid': `preset-${preset.amount_minor}` },
      `${preset.amount} ${currency}`, h('span', { class: 'hint' }, ` → ${formatMoney(preset.credit)}`));
    button.addEventListener('click', () => {
      status.clear();
      button.disabled = true;
      startCheckout(preset.amount_minor, keepCard.checked)
        .catch((error: unknown) => status.show(errorMessage(error), 'error'))
        .finally(() => (button.disabled = false));
    });
    return button;
  });
  const custom = createForm({
    label: 'Pay a custom amount',
    submitLabel: 'Pay by card',
    fallbackField: 'amount',
    fields: [inputField({
      name: 'amount',
      label: `Amount (${currency})`,
      required: true,
      hint: `From ${options.min?.amount ?? ''} to ${options.max?.amount ?? ''} ${currency}.`,
      attrs: { inputmode: 'decimal', autocomplete: 'off', pattern: '\\d+(\\.\\d+)?' },
    })],
    async onSubmit(form) {
      status.clear();
      await startCheckout(valueOf(form, 'amount'), keepCard.checked);
    },
  });
  return section('Pay by card',
    h('p', { class: 'lead' }, `Paid through Stripe; each ${currency === '' ? 'unit' : `1 ${currency}`} adds ${formatMoney(options.units_per_currency_unit ?? '1')} to your balance.`),
    buttonRow(...presets),
    h('label', { class: 'check' }, keepCard, h('span', null, ' Keep this card for auto-recharge')),
    custom,
    status.element);
}

export function autoRechargeSection(context: PageContext, currency: string): HTMLElement {
  const body = h('div');
  // Outside the form, which is built again from the saved settings after each save.
  const status = statusLine();
  const load = async () => {
    const { auto_recharge: settings } = await apiGet<{ auto_recharge: AutoRechargeSettings }>('/api/payments/auto-recharge', { signal: context.signal });
    body.replaceChildren(autoRechargeForm(settings, currency.toUpperCase(), status, () => void load()));
  };
  void load().catch((error: unknown) => body.replaceChildren(h('p', { class: 'form-error' }, errorMessage(error))));
  return h('div', { 'data-testid': 'auto-recharge' }, section('Auto-recharge', body, status.element));
}

function autoRechargeForm(settings: AutoRechargeSettings, currency: string, status: StatusLine, reload: () => void): HTMLElement {
  const notes = [
    settings.card_saved ? null : h('p', { class: 'hint' }, 'Save a card first: tick "Keep this card for auto-recharge" on a top-up.'),
    settings.needs_action ? h('p', { class: 'form-error', 'data-testid': 'needs-action' }, 'Your bank asked to confirm the last recharge: top up once by card to authenticate it.') : null,
    settings.last_error && !settings.needs_action ? h('p', { class: 'form-error', 'data-testid': 'recharge-error' }, `Last recharge failed (${settings.failures} in a row): ${settings.last_error}`) : null,
  ];
  const form = createForm({
    label: 'Auto-recharge settings',
    submitLabel: 'Save',
    fields: [
      h('label', { class: 'check' },
        h('input', { type: 'checkbox', name: 'enabled', value: 'on', checked: settings.enabled, 'data-testid': 'recharge-enabled' }),
        h('span', null, ' Recharge automatically')),
      inputField({ name: 'threshold', label: 'When my balance drops below', value: settings.threshold === '0' ? '' : settings.threshold, attrs: { inputmode: 'decimal' } }),
      inputField({ name: 'amount', label: `Charge my card (${currency})`, value: settings.amount_minor === 0 ? '' : settings.amount, attrs: { inputmode: 'decimal' } }),
      inputField({ name: 'monthly_cap', label: `But never more than this a month (${currency})`, value: settings.monthly_cap_minor === 0 ? '' : settings.monthly_cap, attrs: { inputmode: 'decimal' } }),
      // Turning it on or raising it lets the card be charged without you: the server asks for one of these.
      inputField({ name: 'password', label: 'Your password (to turn on or raise)', type: 'password', attrs: { autocomplete: 'current-password' } }),
      inputField({
        name: 'code', label: 'Two-factor code (if on, instead of the password)',
        hint: 'The 6-digit code from your authenticator app, or a recovery code.',
        attrs: { autocomplete: 'one-time-code', maxlength: 64 },
      }),
    ],
    async onSubmit(form) {
      const enabled = checkedValues(form, 'enabled').length > 0;
      const password = form.elements.namedItem('password');
      const code = valueOf(form, 'code');
      await apiPut('/api/payments/auto-recharge', {
        enabled,
        threshold: valueOf(form, 'threshold'),
        amount: valueOf(form, 'amount'),
        monthly_cap: valueOf(form, 'monthly_cap'),
        // Read untrimmed: spaces can be part of a password.
        ...(password instanceof HTMLInputElement && password.value !== '' && { password: password.value }),
        ...(code !== '' && { code }),
      });
      status.show(enabled ? 'Auto-recharge is on.' : 'Auto-recharge is off.', 'success');
      reload();
    },
  });
  return h('div', null, ...notes, form);
}
