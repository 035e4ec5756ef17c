/**
 * Usage: every request, charged or refused, filtered by key, models, status, session, endpoint and
 * dates, newest first, paged by cursor, with totals over every matching row; as JSON or a CSV
 * download. A user sees their own; an administrator may name any account, or `account_id=all`.
 */
import type Router from '@koa/router';
import { ENDPOINTS } from '../../protocols/types';
import type { RefusalCursor, RefusalFilter, RefusalRecord } from '../../store/refusals';
import type { ChargeCursor, ChargeFilter, ChargeRecord } from '../../store/store';
import { formatUnits } from '../../billing/money';
import { ApiError, invalid } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { attachment, toCsv } from '../csv';
import { refusalUsageView, USAGE_FIELDS, usageView } from '../views';
import { dateParam, limitParam, single } from './query';

const PAGE_LIMIT = 1000;
const EXPORT_LIMIT = 100_000;
const STATUSES = ['ok', 'failed', 'refused'] as const;
type StatusFilter = (typeof STATUSES)[number];

/** Whose charges: the caller's own unless an admin asks for another account or all. */
export function accountScope(ctx: ApiContext): string | undefined {
  const { account } = callerOf(ctx);
  const asked = single(ctx.query.account_id, 'account_id');
  if (asked === undefined || asked === account.id) return account.id;
  if (account.role !== 'admin') throw new ApiError('forbidden', 'Only administrators may read the usage of other accounts.');
  return asked === 'all' ? undefined : asked;
}

/** Where a page ended in each of the two lists it merges; null: that list has not been read from yet. */
interface UsageCursor {
  readonly charge: ChargeCursor | null;
  readonly refusal: RefusalCursor | null;
}

type CursorJson = { c: [string, string] | null; r: [string, string] | null };

function encodeCursor(cursor: UsageCursor): string {
  const json: CursorJson = {
    c: cursor.charge === null ? null : [cursor.charge.createdAt.toISOString(), cursor.charge.requestId],
    r: cursor.refusal === null ? null : [cursor.refusal.createdAt.toISOString(), cursor.refusal.id],
  };
  return Buffer.from(JSON.stringify(json)).toString('base64url');
}

function decodeCursor(text: string | undefined): UsageCursor {
  if (text === undefined) return { charge: null, refusal: null };
  try {
    const json = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as CursorJson;
    const at = (value: string) => {
      const date = new Date(value);
      if (Number.isNaN(date.getTime())) throw new Error('not a time');
      return date;
    };
    return {
      charge: json.c === null ? null : { createdAt: at(json.c[0]), requestId: String(json.c[1]) },
      refusal: json.r === null ? null : { createdAt: at(json.r[0]), id: String(json.r[1]) },
    };
  } catch {
    throw invalid('cursor', 'This page link is out of date or damaged; start again from the first page.');
  }
}

/** `model` given once, repeated, or as a comma-separated list. */
function modelsParam(value: string | string[] | undefined): string[] | undefined {
  const list = (Array.isArray(value) ? value : value === undefined ? [] : [value]).flatMap((entry) => entry.split(',')).map((entry) => entry.trim()).filter((entry) => entry !== '');
  return list.length === 0 ? undefined : [...new Set(list)];
}

function statusParam(ctx: ApiContext): StatusFilter | undefined {
  const text = single(ctx.query.status, 'status');
  if (text === undefined) return undefined;
  if (!(STATUSES as readonly string[]).includes(text)) throw invalid('status', `Choose a status of ok, failed or refused.`);
  return text as StatusFilter;
}

function endpointParam(ctx: ApiContext): string | undefined {
  const text = single(ctx.query.endpoint, 'endpoint');
  if (text === undefined) return undefined;
  if (!(text in ENDPOINTS)) throw invalid('endpoint', `There is no endpoint called "${text}"; choose one of ${Object.keys(ENDPOINTS).join(', ')}.`);
  return text;
}

interface Filters {
  readonly accountId: string | undefined;
  readonly charges: ChargeFilter | null;
  readonly refusals: RefusalFilter | null;
}

/** The query's filters, for each list; null where the status leaves that list out. */
function filtersOf(ctx: ApiContext): Filters {
  const since = dateParam(ctx.query.since, 'since', 'start');
  const until = dateParam(ctx.query.until, 'until', 'end');
  if (since !== undefined && until !== undefined && since.getTime() >= until.getTime()) {
    throw invalid('since', 'The start date must be before the end date.');
  }
  const accountId = accountScope(ctx);
  const common = {
    accountId,
    keyId: single(ctx.query.key_id, 'key_id'),
    models: modelsParam(ctx.query.model),
    sessionId: single(ctx.query.session_id, 'session_id'),
    endpoint: endpointParam(ctx),
    since,
    until,
  };
  const status = statusParam(ctx);
  return {
    accountId,
    charges: status === 'refused' ? null : { ...common, status },
    refusals: status === 'ok' || status === 'failed' ? null : common,
  };
}

type Row = { readonly kind: 'charge'; readonly charge: ChargeRecord } | { readonly kind: 'refusal'; readonly refusal: RefusalRecord };

const timeOf = (row: Row) => (row.kind === 'charge' ? row.charge.createdAt : row.refusal.createdAt).getTime();

/** Both lists from their cursors, merged newest first: up to `limit` rows, and whether more follow. */
async function page(deps: AdminDeps, filters: Filters, cursor: UsageCursor, limit: number): Promise<{ rows: Row[]; next: UsageCursor | null }> {
  const [charges, refusals] = await Promise.all([
    filters.charges === null ? [] : deps.store.listCharges({ ...filters.charges, limit: limit + 1, page: { before: cursor.charge } }),
    filters.refusals === null ? [] : deps.store.refusals.list({ ...filters.refusals, limit: limit + 1, before: cursor.refusal ?? undefined }),
  ]);
  const merged: Row[] = [...charges.map((charge) => ({ kind: 'charge' as const, charge })), ...refusals.map((refusal) => ({ kind: 'refusal' as const, refusal }))];
  merged.sort((a, b) => timeOf(b) - timeOf(a));
  const rows = merged.slice(0, limit);
  if (merged.length <= limit) return { rows, next: null };
  let next = cursor;
  for (const row of rows) {
    next = row.kind === 'charge'
      ? { ...next, charge: { createdAt: row.charge.createdAt, requestId: row.charge.requestId } }
      : { ...next, refusal: { createdAt: row.refusal.createdAt, id: row.refusal.id } };
  }
  return { rows, next };
}

/** Totals over every row the filters match, on every page. */
async function totals(deps: AdminDeps, filters: Filters) {
  const [charged, refused] = await Promise.all([
    filters.charges === null ? { requests: 0, cost: 0n, failed: 0 } : deps.store.chargeTotals(filters.charges),
    filters.refusals === null ? [] : deps.store.refusals.summary(filters.refusals),
  ]);
  const refusedRequests = refused.reduce((sum, row) => sum + row.requests, 0);
  return { requests: charged.requests + refusedRequests, cost: formatUnits(charged.cost), failed: charged.failed, refused: refusedRequests };
}

export function usageRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/usage', signedIn(deps), async (ctx) => {
    const csv = single(ctx.query.format, 'format') === 'csv';
    const filters = filtersOf(ctx);
    const limit = csv ? limitParam(ctx.query.limit, EXPORT_LIMIT, EXPORT_LIMIT) : limitParam(ctx.query.limit, 100, PAGE_LIMIT);
    const cursor = decodeCursor(single(ctx.query.cursor, 'cursor'));
    const [{ rows, next }, sums, keys] = await Promise.all([
      page(deps, filters, cursor, limit),
      csv ? null : totals(deps, filters),
      deps.store.listKeys(filters.accountId === undefined ? undefined : { accountId: filters.accountId }),
    ]);
    const names = new Map(keys.map((key) => [key.id, key.name]));
    const views = rows.map((row) => (row.kind === 'charge' ? usageView(row.charge, names) : refusalUsageView(row.refusal, names)));
    if (!csv) {
      ctx.body = { usage: views, next_cursor: next === null ? null : encodeCursor(next), totals: sums };
      return;
    }
    attachment(ctx, `tollgate-usage-${new Date().toISOString().slice(0, 10)}.csv`);
    ctx.body = toCsv(USAGE_FIELDS, views);
  });

  router.get('/usage/refusals', signedIn(deps), async (ctx) => {
    const filters = filtersOf(ctx);
    const rows = filters.refusals === null ? [] : await deps.store.refusals.summary(filters.refusals);
    ctx.body = { reasons: rows.map((row) => ({ status: row.status, reason: row.code, refused_by: row.level, requests: row.requests, last_at: row.lastAt.toISOString() })) };
  });
}
