/**
 * The JSON shapes of usage analytics: summary rows, one request in full. Money as decimal strings of
 * balance units, as everywhere in the management API; ratios as plain numbers (they are not money).
 */
import { formatUnits, marginOf } from '../billing/money';
import { TOKENS_PER_PRICE_UNIT } from '../billing/prices';
import { INPUT_TOKEN_KINDS, TOKEN_KINDS, type TokenCounts, type TokenKind } from '../protocols/types';
import { TOKEN_COLUMNS } from '../store/rows';
import type { ChargeRecord, UsageSummaryRow } from '../store/store';
import { usageView } from './views';

/** Cache reads over every input-side token (uncached input, cache writes, cache reads); null without input. */
function cacheHitRatio(tokens: TokenCounts): number | null {
  const input = INPUT_TOKEN_KINDS.reduce((sum, kind) => sum + tokens[kind], 0);
  return input === 0 ? null : Math.round((tokens.cacheReadTokens / input) * 10_000) / 10_000;
}

/** Fields of a summary row, in the order of the CSV export's columns. */
export const SUMMARY_FIELDS = [
  'group',
  'label',
  'requests',
  'errors',
  'cost',
  ...TOKEN_KINDS.map((kind) => TOKEN_COLUMNS[kind]),
  'cache_hit_ratio',
  'first_at',
  'last_at',
  'models',
] as const;

export type SummaryView = Record<(typeof SUMMARY_FIELDS)[number], string | number | null>;

/** A summary row; `label` names a key or account by its name where the group is its id. */
export function summaryView(row: UsageSummaryRow, label: string | null): SummaryView {
  const tokens = Object.fromEntries(TOKEN_KINDS.map((kind) => [TOKEN_COLUMNS[kind], row[kind]])) as Record<(typeof TOKEN_COLUMNS)[TokenKind], number>;
  return {
    group: row.group,
    label,
    requests: row.requests,
    errors: row.errors,
    cost: formatUnits(row.cost),
    ...tokens,
    cache_hit_ratio: cacheHitRatio(row),
    first_at: row.firstAt.toISOString(),
    last_at: row.lastAt.toISOString(),
    models: row.models === null ? null : row.models.join(' '),
  };
}

/** The operator's columns, after the others: never in an account's own view of its usage. */
export const OPERATOR_SUMMARY_FIELDS = [...SUMMARY_FIELDS, 'upstream_cost', 'uncosted_requests', 'margin'] as const;

export type OperatorSummaryView = Record<(typeof OPERATOR_SUMMARY_FIELDS)[number], string | number | null>;

/**
 * A summary row as the operator reads it: also what it cost upstream and the margin (marginOf: both
 * over the charges of known cost), with how many charges had no known cost so a partial sum shows.
 */
export function operatorSummaryView(row: UsageSummaryRow, label: string | null): OperatorSummaryView {
  if (row.upstream === null) throw new Error('An operator summary needs the upstream sums; ask with upstreamCost.');
  return {
    ...summaryView(row, label),
    upstream_cost: formatUnits(row.upstream.cost),
    uncosted_requests: row.upstream.uncosted,
    margin: formatUnits(marginOf(row.upstream.costedCharged, row.upstream.cost)),
  };
}

/** `count × price per 1M` in balance units, exact: nano-units per million tokens carry 15 decimals. */
function perMillionUnits(product: bigint): string {
  const scale = 1_000_000_000n * TOKENS_PER_PRICE_UNIT;
  const whole = product / scale;
  const fraction = (product % scale).toString().padStart(15, '0').replace(/0+$/, '');
  return fraction === '' ? String(whole) : `${whole}.${fraction}`;
}

/** Each token kind with the price the charge used and what it came to, before the one rounding. */
function lines(charge: ChargeRecord) {
  const tokens = TOKEN_KINDS.map((kind) => {
    const nano = charge.prices === null ? 0n : BigInt(charge.prices.tokens[kind] ?? '0');
    return { kind: TOKEN_COLUMNS[kind], tokens: charge[kind], price_per_million: formatUnits(nano), cost: perMillionUnits(BigInt(charge[kind]) * nano) };
  });
  const tools = Object.entries(charge.toolCalls).map(([tool, calls]) => {
    const nano = charge.prices === null ? 0n : BigInt(charge.prices.tool_calls[tool] ?? '0');
    return { tool, calls, price_per_thousand: formatUnits(nano), cost: perMillionUnits(BigInt(calls) * nano * (TOKENS_PER_PRICE_UNIT / 1000n)) };
  });
  const perImage = charge.prices?.per_image;
  const images =
    perImage === undefined
      ? []
      : [{ size_quality: perImage.key, images: charge.images ?? 0, price_per_image: formatUnits(BigInt(perImage.nano)), cost: formatUnits(BigInt(charge.images ?? 0) * BigInt(perImage.nano)) }];
  return { tokens, tools, images };
}

/** One request in full: the usage row, what served it, and the price of every token kind. */
export function requestView(charge: ChargeRecord, keyName: string | null) {
  const { tokens, tools, images } = lines(charge);
  return {
    ...usageView(charge, new Map([[charge.keyId, keyName]])),
    held: formatUnits(charge.held),
    requested_model: charge.requestedModel ?? null,
    served_model: charge.servedModel ?? null,
    attempts: (charge.attempts ?? []).map((attempt) => ({ provider: attempt.provider, outcome: attempt.outcome, duration_ms: attempt.ms })),
    ttfb_ms: charge.ttfbMs ?? null,
    session_id: charge.sessionId ?? null,
    user_agent: charge.userAgent ?? null,
    origin: charge.origin ?? null,
    priced: charge.prices !== null,
    lines: tokens,
    tool_lines: tools,
    image_lines: images,
    cache_hit_ratio: cacheHitRatio(charge),
  };
}
