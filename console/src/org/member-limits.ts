// The limits an owner or admin sets for one member of an organisation (budget per day, week or
// month; models; rpm and tpm): they bind every key the member has or makes there, beside the key's own.
import { apiPatch } from '../api.js';
import { h } from '../dom.js';
import { createForm, FieldError, inputField, selectField, valueOf } from '../forms.js';
import { AMOUNT_PATTERN, AMOUNT_PATTERN_MESSAGE, formatMoney } from '../money.js';
import { announce } from '../status.js';
import type { Member, Organisation } from '../types.js';

/** The member's limits in words, for the members table. */
export function memberLimitsCell(member: Member): string {
  const limits = member.limits;
  if (limits === null) return '—';
  const parts = [
    limits.budget ? `${member.budget_spent ? `${formatMoney(member.budget_spent.spent)} spent of ` : ''}${formatMoney(limits.budget.amount)} a ${limits.budget.period}` : null,
    limits.models ? `models: ${limits.models.join(', ')}` : null,
    limits.rate_limits?.rpm ? `${limits.rate_limits.rpm} rpm` : null,
    limits.rate_limits?.tpm ? `${limits.rate_limits.tpm} tpm` : null,
  ].filter((part): part is string => part !== null);
  return parts.length === 0 ? 'None' : parts.join('; ');
}

function wholeNumber(form: HTMLFormElement, name: string): number | null {
  const text = valueOf(form, name);
  if (text === '') return null;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new FieldError(name, 'Enter a whole number, or leave it empty for no limit.');
  return value === 0 ? null : value;
}

export function memberLimitsEditor(organisation: Organisation, member: Member, onDone: () => void): HTMLElement {
  const limits = member.limits;
  const rates = limits?.rate_limits ?? null;
  const form = createForm({
    label: `Limits of ${member.name}`,
    submitLabel: 'Save limits',
    secondary: [h('button', { type: 'button', class: 'button', onclick: onDone }, 'Cancel')],
    fields: [
      inputField({ name: 'budget_amount', label: 'Budget', value: limits?.budget?.amount ?? null, hint: 'Leave empty for no budget.', attrs: { inputmode: 'decimal', pattern: AMOUNT_PATTERN, 'data-pattern-message': AMOUNT_PATTERN_MESSAGE, autocomplete: 'off' } }),
      selectField({ name: 'budget_period', label: 'Budget per', value: limits?.budget?.period ?? 'month', options: [
        { value: 'day', label: 'day' }, { value: 'week', label: 'week' }, { value: 'month', label: 'month' },
      ] }),
      inputField({ name: 'models', label: 'Models', value: limits?.models?.join(', ') ?? null, hint: 'Comma-separated; empty for every model.', attrs: { autocomplete: 'off' } }),
      inputField({ name: 'rpm', label: 'Requests per minute', type: 'number', value: rates?.rpm ?? null, attrs: { min: 0, step: 1, inputmode: 'numeric' } }),
      inputField({ name: 'tpm', label: 'Tokens per minute', type: 'number', value: rates?.tpm ?? null, attrs: { min: 0, step: 1, inputmode: 'numeric' } }),
    ],
    async onSubmit(submitted) {
      const amount = valueOf(submitted, 'budget_amount');
      const models = valueOf(submitted, 'models').split(',').map((model) => model.trim()).filter(Boolean);
      const rpm = wholeNumber(submitted, 'rpm');
      const tpm = wholeNumber(submitted, 'tpm');
      const rateLimits = { ...(rpm === null ? {} : { rpm }), ...(tpm === null ? {} : { tpm }) };
      await apiPatch(`/api/orgs/${organisation.id}/members/${member.account_id}`, {
        budget: amount === '' ? null : { amount, period: valueOf(submitted, 'budget_period') },
        models: models.length === 0 ? null : models,
        rate_limits: Object.keys(rateLimits).length === 0 ? null : rateLimits,
      });
      announce(`${member.name}'s limits saved.`);
      onDone();
    },
  });
  return h('div', { class: 'panel', 'data-testid': 'member-limits' },
    h('h3', { tabindex: -1 }, `Limits of ${member.name}`), form);
}
