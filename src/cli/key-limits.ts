/**
 * What a key may spend and which models it may use, as typed on the command line (`--spend-limit`,
 * `--models`) and as shown back.
 */
import { formatUnits } from '../billing/money';
import type { ApiKeyRecord } from '../store/store';
import { parsePositiveAmount } from './amount';

/** One model name in a `--models` list: no spaces or commas, a sane length. */
const MODEL_NAME_PATTERN = /^[^\s,\u0000-\u001f\u007f]{1,200}$/;

/** `--spend-limit AMOUNT`, or `none` for no limit. */
export function parseSpendLimit(text: string): bigint | null {
  if (text.trim() === 'none') return null;
  return parsePositiveAmount(text, 'spend limit');
}

/**
 * `--models a,b,c` as a list without blanks or repeats, or `all` for every model (so no model can be
 * called `all` in a key's list: the word always means the absence of a list).
 */
export function parseModelList(text: string): readonly string[] | null {
  if (text.trim() === 'all') return null;
  const models = [...new Set(text.split(',').map((model) => model.trim()).filter((model) => model !== ''))];
  if (models.length === 0) throw new Error(`invalid model list "${text}": name at least one model, comma-separated`);
  const bad = models.find((model) => !MODEL_NAME_PATTERN.test(model));
  if (bad !== undefined) throw new Error(`invalid model name "${bad}" in --models`);
  return models;
}

export function formatSpendLimit(key: Pick<ApiKeyRecord, 'spendLimit'>): string {
  return key.spendLimit === null ? 'none' : formatUnits(key.spendLimit);
}

export function formatModels(key: Pick<ApiKeyRecord, 'models'>): string {
  return key.models === null ? 'all' : key.models.join(',');
}
