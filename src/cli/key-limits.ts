/**
 * What a key may spend, which models it may use and how fast, as typed on the command line
 * (`--spend-limit`, `--models`, `--rpm`, `--tpm`, `--concurrency`) and as shown back.
 */
import { formatUnits } from '../billing/money';
import type { ApiKeyRecord, KeyRateLimits } from '../store/store';
import { parsePositiveAmount } from './amount';
import { UsageError } from './args';
import { networkListProblem } from '../auth/networks';

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

/** `--allowed-networks 10.0.0.0/8,2001:db8::/32`, or `any` for anywhere. */
export function parseNetworkList(text: string): readonly string[] | null {
  if (text.trim() === 'any') return null;
  const networks = [...new Set(text.split(',').map((network) => network.trim()).filter((network) => network !== ''))];
  const problem = networkListProblem(networks);
  if (problem !== null) throw new UsageError(`invalid --allowed-networks: ${problem}`);
  return networks;
}

export function formatNetworks(networks: readonly string[] | null | undefined): string {
  return networks == null ? 'any' : networks.join(',');
}

export function formatSpendLimit(key: Pick<ApiKeyRecord, 'spendLimit'>): string {
  return key.spendLimit === null ? 'none' : formatUnits(key.spendLimit);
}

export function formatModels(key: Pick<ApiKeyRecord, 'models'>): string {
  return key.models === null ? 'all' : key.models.join(',');
}

/** The console's ceiling for one rate limit. */
const MAX_RATE_LIMIT = 1_000_000_000;
const RATE_LIMIT_NAMES = ['rpm', 'tpm', 'concurrency'] as const;

/** The `--rpm`, `--tpm`, `--concurrency` flags as typed: a whole number, or `none` (0 means none too). */
export type RateLimitFlags = Partial<Record<(typeof RATE_LIMIT_NAMES)[number], string>>;

/** Just the rate-limit flags out of a command's parsed options. */
export function rateLimitFlags(values: RateLimitFlags): RateLimitFlags {
  return { rpm: values.rpm, tpm: values.tpm, concurrency: values.concurrency };
}

/**
 * `current` changed by the flags given: a number sets that limit, `none` or 0 removes it, a flag left
 * out keeps it. Null when no limit is left (the key is limited by the operator's settings only).
 */
export function applyRateLimitFlags(current: KeyRateLimits | null, flags: RateLimitFlags): KeyRateLimits | null {
  const limits: { rpm?: number; tpm?: number; concurrency?: number } = { ...(current ?? {}) };
  for (const name of RATE_LIMIT_NAMES) {
    const text = flags[name];
    if (text === undefined) continue;
    const value = text.trim() === 'none' ? 0 : /^\d{1,10}$/.test(text.trim()) ? Number(text.trim()) : NaN;
    if (!(value >= 0 && value <= MAX_RATE_LIMIT)) {
      throw new UsageError(`invalid --${name} "${text}": use a whole number from 0 (no limit) to ${MAX_RATE_LIMIT}, or none`);
    }
    if (value === 0) delete limits[name];
    else limits[name] = value;
  }
  return Object.keys(limits).length === 0 ? null : limits;
}

export function hasRateLimitFlags(flags: RateLimitFlags): boolean {
  return RATE_LIMIT_NAMES.some((name) => flags[name] !== undefined);
}

export function formatRateLimits(key: Pick<ApiKeyRecord, 'rateLimits'>): string {
  const limits = key.rateLimits;
  if (limits === null) return 'none';
  return RATE_LIMIT_NAMES.filter((name) => limits[name] !== undefined).map((name) => `${name} ${limits[name]}`).join(', ');
}
