/**
 * Where the money went: usage summed by model, key, day, session (and, for the operator, account and
 * provider), an account's sessions, and one request in full. Every range is bounded and every list
 * paged; an account reads only its own, and another account's request or session is "not found".
 */
import type Router from '@koa/router';
import { PLAYGROUND_SESSION_GROUP, USAGE_GROUPS, type ChargeFilter, type UsageGroup, type UsageSummaryQuery, type UsageSummaryRow } from '../../store/store';
import { invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { attachment, toCsv } from '../csv';
import { OPERATOR_SUMMARY_FIELDS, operatorSummaryView, requestView, SUMMARY_FIELDS, summaryView } from '../usage-views';
import { usageView } from '../views';
import { dateParam, limitParam, single } from './query';
import { accountScope } from './usage';
import { formatUnits } from '../../billing/money';

export const DAY_MS = 86_400_000;
/** The default range: the last 30 days. */
const DEFAULT_DAYS = 30;
/** The longest range one summary may cover. */
const MAX_RANGE_DAYS = 400;
export const MAX_GROUPS = 1000;
const MAX_OFFSET = 100_000;

interface Range {
  readonly since: Date;
  readonly until: Date;
}

/** `since`/`until` as `GET /api/usage` takes them; by default the last 30 days up to now. */
export function rangeOf(ctx: ApiContext): Range {
  // A range ends before `until`; left out, it ends after this millisecond, so what was written in the
  // same millisecond as the question (a refund, a charge) is in the answer.
  const until = dateParam(ctx.query.until, 'until', 'end') ?? new Date(Date.now() + 1);
  const since = dateParam(ctx.query.since, 'since', 'start') ?? new Date(until.getTime() - DEFAULT_DAYS * DAY_MS);
  if (since.getTime() >= until.getTime()) throw invalid('since', 'since must be before until.');
  if (until.getTime() - since.getTime() > MAX_RANGE_DAYS * DAY_MS) throw invalid('since', `A range covers at most ${MAX_RANGE_DAYS} days.`);
  return { since, until };
}

/** `offset` of a summary page: 0 up to a bound. */
export function summaryOffset(ctx: ApiContext): number {
  const text = single(ctx.query.offset, 'offset');
  if (text === undefined) return 0;
  const offset = Number(text);
  if (!Number.isSafeInteger(offset) || offset < 0 || offset > MAX_OFFSET) throw invalid('offset', `offset must be a whole number from 0 to ${MAX_OFFSET}.`);
  return offset;
}

function groupParam(ctx: ApiContext): UsageGroup {
  const text = single(ctx.query.group_by, 'group_by') ?? 'model';
  if (!(USAGE_GROUPS as readonly string[]).includes(text)) throw invalid('group_by', `group_by must be one of ${USAGE_GROUPS.join(', ')}.`);
  return text as UsageGroup;
}

/** The label of the row of charges made outside any session, so the rows by session add up. */
const NO_SESSION_LABEL = 'no session';
/** The label of the one group the console playground's turns make by session (each visit is a session). */
const PLAYGROUND_LABEL = 'Playground';
/** The label of a key group whose key is no longer listed (deleted): its charges still count. */
const DELETED_KEY_LABEL = 'deleted key';

/** The names that label key, account and session groups, read only when the grouping needs them. */
export async function labeller(deps: AdminDeps, group: UsageGroup, accountId: string | null): Promise<(row: UsageSummaryRow) => string | null> {
  if (group === 'key') {
    const keys = await deps.store.listKeys(accountId === null ? undefined : { accountId });
    const names = new Map(keys.map((key) => [key.id, key.revokedAt === null ? key.name : `${key.name} (${DELETED_KEY_LABEL})`]));
    return (row) => (row.group === null ? null : (names.get(row.group) ?? DELETED_KEY_LABEL));
  }
  if (group === 'session') return (row) => (row.group === null ? NO_SESSION_LABEL : sessionLabel(row));
  if (group === 'account') {
    const names = new Map((await deps.store.listAccounts()).map((account) => [account.id, account.name]));
    return (row) => (row.group === null ? null : (names.get(row.group) ?? null));
  }
  return () => null;
}

/** A session row's label: "Playground" for the playground's group, none for a client's session. */
export function sessionLabel(row: UsageSummaryRow): string | null {
  return row.group === PLAYGROUND_SESSION_GROUP ? PLAYGROUND_LABEL : null;
}

/**
 * What one session's page reads: that session's charges, or for the playground's group the
 * playground's turns (in a session, as the list counts them).
 */
export function oneSession(sessionId: string): Pick<UsageSummaryQuery, 'sessionId' | 'origin' | 'namedSessionsOnly'> & Pick<ChargeFilter, 'inSession'> {
  return sessionId === PLAYGROUND_SESSION_GROUP ? { origin: 'playground', namedSessionsOnly: true, inSession: true } : { sessionId };
}

/** The account a session or request belongs to must be the caller's, unless an administrator asks. */
function visibleTo(ctx: ApiContext, accountId: string): boolean {
  const { account } = callerOf(ctx);
  return account.id === accountId || account.role === 'admin';
}

export function insightRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/usage/summary', signedIn(deps), async (ctx) => {
    const groupBy = groupParam(ctx);
    const accountId = accountScope(ctx) ?? null;
    const range = rangeOf(ctx);
    const csv = single(ctx.query.format, 'format') === 'csv';
    // What a request cost upstream is the operator's business: an administrator reads it, an account never.
    const operator = callerOf(ctx).account.role === 'admin';
    const rows = await deps.store.usageSummary({ accountId, groupBy, upstreamCost: operator, ...range, limit: limitParam(ctx.query.limit, csv ? MAX_GROUPS : 100, MAX_GROUPS), offset: summaryOffset(ctx) });
    const label = await labeller(deps, groupBy, accountId);
    const operatorViews = () => rows.map((row) => operatorSummaryView(row, label(row)));
    const accountViews = () => rows.map((row) => summaryView(row, label(row)));
    if (csv) {
      attachment(ctx, `tollgate-usage-by-${groupBy}-${range.since.toISOString().slice(0, 10)}.csv`);
      ctx.body = operator ? toCsv(OPERATOR_SUMMARY_FIELDS, operatorViews()) : toCsv(SUMMARY_FIELDS, accountViews());
      return;
    }
    ctx.body = { group_by: groupBy, since: range.since.toISOString(), until: range.until.toISOString(), rows: operator ? operatorViews() : accountViews() };
  });

  router.get('/usage/sessions', signedIn(deps), async (ctx) => {
    const accountId = accountScope(ctx) ?? null;
    const range = rangeOf(ctx);
    const rows = await deps.store.usageSummary({ accountId, groupBy: 'session', namedSessionsOnly: true, ...range, limit: limitParam(ctx.query.limit, 50, MAX_GROUPS), offset: summaryOffset(ctx) });
    // The cap each session of the account counts against, so the console can show spend against it.
    const account = accountId === null ? null : await deps.store.findAccountById(accountId);
    const sessionBudget = account?.sessionBudget == null ? null : formatUnits(account.sessionBudget);
    ctx.body = { since: range.since.toISOString(), until: range.until.toISOString(), session_budget: sessionBudget, sessions: rows.map((row) => summaryView(row, sessionLabel(row))) };
  });

  router.get('/usage/sessions/:id', signedIn(deps), async (ctx) => {
    const sessionId = (ctx.params as Readonly<Record<string, string>>).id;
    const accountId = accountScope(ctx) ?? null;
    // Every charge of the session, whenever it was made: a session is found by its id, not a range.
    const { inSession, ...which } = oneSession(sessionId);
    const [summary] = await deps.store.usageSummary({ accountId, groupBy: 'session', ...which, since: new Date(0), until: new Date(Date.now() + DAY_MS), limit: 1, offset: 0 });
    if (summary === undefined) throw notFound('This session');
    const charges = await deps.store.listCharges({ accountId: accountId ?? undefined, sessionId: which.sessionId, origin: which.origin, inSession, limit: limitParam(ctx.query.limit, 100, 1000), offset: summaryOffset(ctx) });
    const keys = await deps.store.listKeys(accountId === null ? undefined : { accountId });
    const names = new Map(keys.map((key) => [key.id, key.name]));
    ctx.body = { session: summaryView(summary, sessionLabel(summary)), requests: charges.map((charge) => ({ ...usageView(charge, names), session_id: charge.sessionId ?? null })) };
  });

  router.get('/usage/requests/:id', signedIn(deps), async (ctx) => {
    const charge = await deps.store.findCharge((ctx.params as Readonly<Record<string, string>>).id);
    // Another account's request is "not found", so its id reveals nothing.
    if (charge === null || !visibleTo(ctx, charge.accountId)) throw notFound('This request');
    const key = (await deps.store.listKeys({ accountId: charge.accountId })).find((candidate) => candidate.id === charge.keyId);
    ctx.body = { request: requestView(charge, key?.name ?? null) };
  });
}
