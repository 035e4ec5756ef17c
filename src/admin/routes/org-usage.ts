/**
 * Where an organisation's money went, as `/usage/summary`, `/usage/sessions` and
 * `/usage/requests/{id}` answer for an account: summed by model, key, day, session or member, its
 * sessions, one session, one request. Every read covers one member's charges or, for an owner or
 * admin, every member's (`member_id` narrows it); a member asking for another's is 404, and so is a
 * session or request with none of the caller's charges in it.
 */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { USAGE_GROUPS, type UsageGroup, type UsageSummaryRow } from '../../store/store';
import { invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import type { AdminDeps, ApiContext, ApiState } from '../context';
import { attachment, toCsv } from '../csv';
import { callerMembership, may, memberScope } from '../org-access';
import { requestView, SUMMARY_FIELDS, summaryView } from '../usage-views';
import { usageView } from '../views';
import { DAY_MS, labeller, MAX_GROUPS, oneSession, rangeOf, sessionLabel, summaryOffset } from './insight';
import { limitParam, single } from './query';

/** An organisation's usage is summed by these: an account's own groups, and its members. */
const ORG_GROUPS: readonly UsageGroup[] = [...USAGE_GROUPS.filter((group) => group !== 'account' && group !== 'provider'), 'member'];

/** The label of a member's row once they have left (their charges still count). */
const FORMER_MEMBER_LABEL = 'former member';

function orgGroupParam(ctx: ApiContext): UsageGroup {
  const text = single(ctx.query.group_by, 'group_by') ?? 'model';
  if (!(ORG_GROUPS as readonly string[]).includes(text)) throw invalid('group_by', `group_by must be one of ${ORG_GROUPS.join(', ')}.`);
  return text as UsageGroup;
}

/** The organisation's key and session groups are labelled as an account's; a member's row by their name. */
async function orgLabeller(deps: AdminDeps, group: UsageGroup, organisationId: string): Promise<(row: UsageSummaryRow) => string | null> {
  if (group !== 'member') return labeller(deps, group, organisationId);
  const names = new Map((await deps.store.orgs.listMembers(organisationId)).map((member) => [member.accountId, member.accountName]));
  return (row) => (row.group === null ? null : (names.get(row.group) ?? FORMER_MEMBER_LABEL));
}

/** The charge filter's member part: nothing for every member, else that member's charges. */
const memberPart = (memberAccountId: string | undefined) => (memberAccountId === undefined ? {} : { memberAccountId });

export function orgUsageRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/orgs/:id/usage/summary', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const member = memberScope(ctx, membership);
    const groupBy = orgGroupParam(ctx);
    const range = rangeOf(ctx);
    const csv = single(ctx.query.format, 'format') === 'csv';
    const rows = await deps.store.usageSummary({
      accountId: membership.organisationId,
      ...memberPart(member),
      groupBy,
      ...range,
      limit: limitParam(ctx.query.limit, csv ? MAX_GROUPS : 100, MAX_GROUPS),
      offset: summaryOffset(ctx),
    });
    const label = await orgLabeller(deps, groupBy, membership.organisationId);
    const views = rows.map((row) => summaryView(row, label(row)));
    if (csv) {
      attachment(ctx, `tollgate-usage-by-${groupBy}-${range.since.toISOString().slice(0, 10)}.csv`);
      ctx.body = toCsv(SUMMARY_FIELDS, views);
      return;
    }
    ctx.body = { member_id: member ?? null, group_by: groupBy, since: range.since.toISOString(), until: range.until.toISOString(), rows: views };
  });

  router.get('/orgs/:id/usage/sessions', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const member = memberScope(ctx, membership);
    const range = rangeOf(ctx);
    const [rows, organisation] = await Promise.all([
      deps.store.usageSummary({
        accountId: membership.organisationId,
        ...memberPart(member),
        groupBy: 'session',
        namedSessionsOnly: true,
        ...range,
        limit: limitParam(ctx.query.limit, 50, MAX_GROUPS),
        offset: summaryOffset(ctx),
      }),
      deps.store.findAccountById(membership.organisationId),
    ]);
    // The organisation's session budget binds each session of its keys, whoever's they are.
    const sessionBudget = organisation?.sessionBudget == null ? null : formatUnits(organisation.sessionBudget);
    ctx.body = { member_id: member ?? null, since: range.since.toISOString(), until: range.until.toISOString(), session_budget: sessionBudget, sessions: rows.map((row) => summaryView(row, sessionLabel(row))) };
  });

  router.get('/orgs/:id/usage/sessions/:sessionId', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const member = memberScope(ctx, membership);
    const { inSession, ...which } = oneSession((ctx.params as Readonly<Record<string, string>>).sessionId);
    // Every charge of the session, whenever it was made: a session is found by its id, not a range.
    const [summary] = await deps.store.usageSummary({
      accountId: membership.organisationId,
      ...memberPart(member),
      groupBy: 'session',
      ...which,
      since: new Date(0),
      until: new Date(Date.now() + DAY_MS),
      limit: 1,
      offset: 0,
    });
    if (summary === undefined) throw notFound('This session');
    const [charges, keys, members] = await Promise.all([
      deps.store.listCharges({ accountId: membership.organisationId, ...memberPart(member), sessionId: which.sessionId, origin: which.origin, inSession, limit: limitParam(ctx.query.limit, 100, 1000), offset: summaryOffset(ctx) }),
      deps.store.listKeys({ accountId: membership.organisationId }),
      deps.store.orgs.listMembers(membership.organisationId),
    ]);
    const keyNames = new Map(keys.map((key) => [key.id, key.name]));
    const names = new Map(members.map((one) => [one.accountId, one.accountName]));
    ctx.body = {
      member_id: member ?? null,
      session: summaryView(summary, sessionLabel(summary)),
      requests: charges.map((charge) => ({ ...usageView(charge, keyNames), session_id: charge.sessionId ?? null, member_id: charge.memberAccountId ?? null, member_name: names.get(charge.memberAccountId ?? '') ?? null })),
    };
  });

  router.get('/orgs/:id/usage/requests/:requestId', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const charge = await deps.store.findCharge((ctx.params as Readonly<Record<string, string>>).requestId);
    // Another account's request, or another member's for a member, is "not found": its id reveals nothing.
    const visible = charge !== null && charge.accountId === membership.organisationId && (may(membership.role, 'read_all_usage') || charge.memberAccountId === membership.accountId);
    if (!visible) throw notFound('This request');
    const key = (await deps.store.listKeys({ accountId: charge.accountId })).find((candidate) => candidate.id === charge.keyId);
    ctx.body = { request: requestView(charge, key?.name ?? null) };
  });
}
