// The spending and rate limits of an API key: one set of fields used both when a
// key is created and when its limits are edited, and the code that reads them back;
// and the budget fields, shared by a key's owner and an administrator setting an account's.
import { FieldError, checkboxGroup, checkedValues, fieldGroup, inputField, selectField, valueOf } from './forms.js';
import { h, type Child } from './dom.js';
import { AMOUNT_PATTERN, AMOUNT_PATTERN_MESSAGE, currency, formatMoney, isDecimal } from './money.js';
import type { ApiKey, Budget, OperatorLimits, RateLimits } from './types.js';

export interface KeyLimits {
  spend_limit: string | null;
  models: string[] | null;
  rate_limits: RateLimits | null;
  allowed_networks: string[] | null;
}

const RATE_FIELDS: ReadonlyArray<{ name: keyof RateLimits; label: string }> = [
  { name: 'rpm', label: 'Requests per minute' },
  { name: 'tpm', label: 'Tokens per minute' },
  { name: 'concurrency', label: 'Concurrent requests' },
];

/** The limits the fields start from: a key's (what it enforces) or an operator's. */
type LimitValues = Pick<ApiKey, 'spend_limit' | 'models' | 'rate_limits' | 'allowed_networks'> & { operator_limits?: OperatorLimits | null };

/** `availableModels` comes from the price list; a key's own models are kept even if no longer priced. */
/** `networks` is false where the key cannot hold them (an organisation's keys). */
export function limitFields(availableModels: readonly string[] | null, key?: LimitValues, networks = true): Child[] {
  const chosen = key?.models ?? [];
  const models = [...new Set([...(availableModels ?? []), ...chosen])];
  return [
    inputField({
      name: 'spend_limit',
      label: 'Spend limit',
      value: key?.spend_limit ?? '',
      hint: `Most this token may spend in total, in ${currency()}. Leave empty for no limit.`,
      attrs: { inputmode: 'decimal', pattern: AMOUNT_PATTERN, 'data-pattern-message': AMOUNT_PATTERN_MESSAGE, autocomplete: 'off', placeholder: 'e.g. 5' },
    }),
    models.length
      ? checkboxGroup({
        name: 'models',
        legend: 'Allowed models',
        hint: 'Leave all unchecked to allow every model.',
        itemName: 'model',
        items: models,
        checked: chosen,
      })
      : fieldGroup({ name: 'models', legend: 'Allowed models' },
        h('p', { class: 'hint' }, availableModels === null
          ? 'The model list could not be loaded; the token will allow every model.'
          : 'No models are configured; the token will allow every model.')),
    fieldGroup({ name: 'rate_limits', legend: 'Rate limits', hint: 'Leave a box empty for no limit.', className: 'inline-fields' },
      RATE_FIELDS.map((field) => inputField({
        name: `rate_limits.${field.name}`,
        label: field.label,
        type: 'number',
        value: key?.rate_limits?.[field.name] ?? '',
        attrs: { min: 1, step: 1, inputmode: 'numeric' },
      }))),
    !networks ? null : inputField({
      name: 'allowed_networks',
      label: 'Allowed networks',
      value: key?.allowed_networks?.join(', ') ?? '',
      hint: 'Addresses or networks this token may be used from, comma-separated (10.0.0.0/8, 2001:db8::/32). Leave empty for anywhere.',
      attrs: { autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. 203.0.113.0/24' },
    }),
    ...(key?.operator_limits ? [h('p', { class: 'hint', 'data-testid': 'operator-limits' }, `Set by the operator: ${describeOperatorLimits(key.operator_limits)}. You can tighten these, not loosen them.`)] : []),
  ];
}

/** The operator's limits in a sentence; "none" when they set nothing. */
export function describeOperatorLimits(limits: OperatorLimits | null): string {
  if (!limits) return 'none';
  const parts = [
    limits.spend_limit !== null ? `spend limit ${formatMoney(limits.spend_limit)}` : null,
    limits.models !== null ? `models ${limits.models.join(', ')}` : null,
    limits.rate_limits !== null ? describeRateLimits(limits.rate_limits) : null,
    limits.allowed_networks !== null ? `networks ${limits.allowed_networks.join(', ')}` : null,
    limits.budget ? `budget ${describeBudget(limits.budget)}` : null,
  ].filter((part): part is string => part !== null);
  return parts.length ? parts.join(' · ') : 'none';
}

/** Reads the limit fields; empty means "no limit" (null). */
export function readLimits(form: HTMLFormElement): KeyLimits {
  const spendLimit = valueOf(form, 'spend_limit');
  if (spendLimit && !isDecimal(spendLimit)) throw new FieldError('spend_limit', AMOUNT_PATTERN_MESSAGE);
  const models = checkedValues(form, 'model');
  const networks = valueOf(form, 'allowed_networks').split(/[\s,]+/).filter((network) => network !== '');
  return {
    spend_limit: spendLimit || null,
    models: models.length ? models : null,
    rate_limits: readRateLimits(form),
    allowed_networks: networks.length ? networks : null,
  };
}

function readRateLimits(form: HTMLFormElement): RateLimits | null {
  const limits: RateLimits = {};
  for (const field of RATE_FIELDS) {
    const text = valueOf(form, `rate_limits.${field.name}`);
    if (text) limits[field.name] = Number.parseInt(text, 10);
  }
  return Object.keys(limits).length ? limits : null;
}

export function describeRateLimits(limits: RateLimits | null): string {
  if (!limits) return 'None';
  const parts = [
    limits.rpm !== undefined ? `${limits.rpm} rpm` : null,
    limits.tpm !== undefined ? `${limits.tpm} tpm` : null,
    limits.concurrency !== undefined ? `${limits.concurrency} concurrent` : null,
  ].filter((part): part is string => part !== null);
  return parts.length ? parts.join(' · ') : 'None';
}

const PERIOD_WORDS: Record<Budget['period'], string> = { day: 'a day', week: 'a week', month: 'a month' };

/** "5 a day (UTC)". */
export function describeBudget(budget: Budget): string {
  return `${formatMoney(budget.amount)} ${PERIOD_WORDS[budget.period]} (${budget.timezone})`;
}

const PERIODS: ReadonlyArray<{ value: Budget['period']; label: string }> = [
  { value: 'day', label: 'Day' },
  { value: 'week', label: 'Week' },
  { value: 'month', label: 'Month' },
];

/** The fields of a key's or an account's budget; the names match the API's, so its errors land beside them. */
export function budgetFields(budget: Budget | null): Child[] {
  return [
    fieldGroup({ name: 'budget', legend: 'Budget', hint: `Most that may be spent each period, in ${currency()}. Leave the amount empty for no budget.`, className: 'inline-fields' },
      inputField({
        name: 'budget.amount',
        label: 'Amount',
        value: budget?.amount ?? '',
        attrs: { inputmode: 'decimal', pattern: AMOUNT_PATTERN, 'data-pattern-message': AMOUNT_PATTERN_MESSAGE, autocomplete: 'off', placeholder: 'e.g. 5' },
      }),
      selectField({ name: 'budget.period', label: 'Period', value: budget?.period ?? 'month', options: PERIODS }),
      inputField({
        name: 'budget.timezone',
        label: 'Time zone',
        value: budget?.timezone ?? 'UTC',
        hint: 'Where the period starts at midnight, e.g. Europe/Berlin.',
        attrs: { autocomplete: 'off', spellcheck: 'false' },
      })),
  ];
}

/** Reads the budget fields; an empty amount means "no budget" (null). */
export function readBudget(form: HTMLFormElement): Budget | null {
  const amount = valueOf(form, 'budget.amount');
  if (!amount) return null;
  if (!isDecimal(amount)) throw new FieldError('budget.amount', AMOUNT_PATTERN_MESSAGE);
  return { amount, period: valueOf(form, 'budget.period') as Budget['period'], timezone: valueOf(form, 'budget.timezone') || 'UTC' };
}
