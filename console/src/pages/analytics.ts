// /console/analytics — where the money went: spend per day, and requests, tokens and
// cost by model, token and session over a range, each table downloadable as CSV. Acting for an
// organisation, its spending (GET /api/orgs/{id}/usage/summary): a member's own, or for an owner or
// admin every member's, by member too, or one member's.
import { actingOrganisationLoaded, managesMembers, usageBase } from '../acting.js';
import { apiGet, withQuery } from '../api.js';
import { dailySpendChart } from '../chart.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import { sumDecimals } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { sessionLink } from '../session-link.js';
import { dataTable } from '../table.js';
import { reasonText, refusedByText } from '../reasons.js';
import type { Organisation, RefusalReason, UsageGroup, UsageGrouping, UsageSummary } from '../types.js';
import { count, money, pageHeading, section, timeEl, totalMoney } from '../ui.js';
import { choiceQuery, everyDay, rangeForm, rangeFrom, rangeQuery, ratioText, type RangeChoice } from '../usage-range.js';

export const analyticsPage: Page = {
  title: 'Analytics',
  render(context: PageContext) {
    // The heading now, so the router's focus lands on it; the rest once the organisation is known.
    const lead = h('span');
    context.root.append(pageHeading('Analytics', lead));
    void actingOrganisationLoaded().then((organisation) => renderAnalytics(context, organisation, lead));
  },
};

function renderAnalytics(context: PageContext, organisation: Organisation | null, lead: HTMLElement): void {
  lead.textContent = organisation === null
    ? 'Where the money went: spend, requests and tokens by day, model, token and session.'
    : `Where ${organisation.name}'s money went: spend, requests and tokens by day, model, token and session${managesMembers(organisation) ? ', and by member' : ', of your own requests'}.`;
  const base = usageBase(organisation);
  const formArea = h('div');
  const totals = h('div');
  const chart = h('div', { class: 'chart-block' });
  const tables = { model: h('div'), key: h('div'), session: h('div'), refused: h('div'), member: h('div') };
  context.root.append(
    formArea,
    totals,
    section('Spend per day', chart),
    // Refused requests are kept per account and key, not per member: an organisation's are not listed.
    ...(organisation === null ? [section('Refused requests', h('p', { class: 'muted' }, 'Requests answered with an error before anything was charged, by reason.'), tables.refused)] : []),
    ...(managesMembers(organisation) ? [section('By member', tables.member)] : []),
    section('By model', tables.model),
    section('By token', tables.key),
    section('By session', h('p', { class: 'muted' }, 'Sessions are what Claude Code, Codex or any client sending x-tollgate-session report.'), tables.session));

  const summary = (choice: RangeChoice, groupBy: UsageGrouping, limit = 100) =>
    apiGet<UsageSummary>(withQuery(`${base}/summary`, { ...rangeQuery(choice), group_by: groupBy, limit }), { signal: context.signal });

  const show = (choice: RangeChoice) => {
    void loadInto(chart, () => summary(choice, 'day', 400), (data) => {
      replace(totals, totalsLine(data.rows));
      return [dailySpendChart(everyDay(choice, data.rows)), csvLink(base, choice, 'day')];
    });
    if (organisation === null) void loadInto(tables.refused, () => apiGet<{ reasons: RefusalReason[] }>(withQuery('/api/usage/refusals', rangeQuery(choice)), { signal: context.signal }), (data) => refusalTable(data.reasons));
    if (managesMembers(organisation)) void loadInto(tables.member, () => summary(choice, 'member'), (data) => [groupTable('member', data.rows), csvLink(base, choice, 'member')]);
    void loadInto(tables.model, () => summary(choice, 'model'), (data) => [groupTable('model', data.rows), csvLink(base, choice, 'model')]);
    void loadInto(tables.key, () => summary(choice, 'key'), (data) => [groupTable('key', data.rows), csvLink(base, choice, 'key')]);
    void loadInto(tables.session, () => summary(choice, 'session', 50), (data) => [groupTable('session', data.rows, { choice }), csvLink(base, choice, 'session')]);
  };

  const initial = rangeFrom(context.query);
  show(initial);
  void rangeForm(initial, context.signal, (choice) => {
    replaceQuery(choiceQuery(choice));
    show(choice);
  }, organisation).then((form) => replace(formArea, form));
}

function totalsLine(days: readonly UsageGroup[]): HTMLElement {
  const requests = days.reduce((sum, row) => sum + row.requests, 0);
  return h('p', { class: 'lead', 'data-testid': 'analytics-total' },
    `${count(requests)} request${requests === 1 ? '' : 's'}, costing `,
    totalMoney(sumDecimals(days.map((row) => row.cost)), 'analytics-total-cost'), ' in this range.');
}

/** Refused requests by reason; each reason opens them in Usage. */
export function refusalTable(rows: readonly RefusalReason[]): HTMLElement {
  return dataTable({
    caption: 'Refused requests by reason',
    hideCaption: true,
    rows,
    emptyText: 'No request was refused in this range.',
    testId: 'refusal-reasons',
    columns: [
      { label: 'Reason', pin: 'start', cell: (row) => reasonText(row.reason) },
      { label: 'Refused by', cell: (row) => refusedByText(row.refused_by) ?? '—' },
      { label: 'Status', cell: (row) => String(row.status), numeric: true },
      { label: 'Requests', cell: (row) => count(row.requests), numeric: true },
      { label: 'Last', cell: (row) => timeEl(row.last_at) },
    ],
  });
}

function csvLink(base: string, choice: RangeChoice, groupBy: UsageGrouping): HTMLElement {
  return h('p', null, h('a', {
    class: 'button button-small',
    download: true,
    href: withQuery(`${base}/summary`, { ...rangeQuery(choice), group_by: groupBy, format: 'csv' }),
  }, `Download CSV (by ${groupBy})`));
}

const GROUP_LABELS: Record<UsageGrouping, string> = { model: 'Model', key: 'Token', day: 'Day (UTC)', session: 'Session', account: 'Account', provider: 'Provider', member: 'Member' };

export interface GroupTableOptions {
  /** The range the rows are of, for the links a session's row makes. */
  readonly choice?: RangeChoice;
  /** An administrator's summary across accounts: what the rows cost upstream, and the margin, beside what they charged. */
  readonly upstream?: boolean;
}

/** A summary table; a session's name opens its page. */
export function groupTable(groupBy: UsageGrouping, rows: readonly UsageGroup[], { choice, upstream = false }: GroupTableOptions = {}): HTMLElement {
  return dataTable({
    caption: `Usage by ${GROUP_LABELS[groupBy].toLowerCase()}`,
    hideCaption: true,
    rows,
    emptyText: 'No requests in this range.',
    testId: `by-${groupBy}`,
    columns: [
      { label: GROUP_LABELS[groupBy], cell: (row) => groupCell(groupBy, row, choice) },
      { label: 'Requests', cell: (row) => count(row.requests), numeric: true },
      { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
      upstream ? { label: 'Upstream cost', cell: (row) => money(row.upstream_cost ?? '0'), numeric: true } : null,
      upstream ? { label: 'Margin', cell: (row) => money(row.margin ?? '0'), numeric: true } : null,
      { label: 'Input', cell: (row) => count(row.input_tokens), numeric: true },
      { label: 'Cache read', cell: (row) => count(row.cache_read_tokens), numeric: true },
      { label: 'Output', cell: (row) => count(row.output_tokens), numeric: true },
      { label: 'Cache hits', cell: (row) => ratioText(row.cache_hit_ratio), numeric: true },
      { label: 'Errors', cell: (row) => count(row.errors), numeric: true },
      groupBy === 'session'
        ? { label: 'Models', cell: (row) => row.models ?? '—' }
        : { label: 'Last request', cell: (row) => timeEl(row.last_at) },
    ],
  });
}

function groupCell(groupBy: UsageGrouping, row: UsageGroup, choice?: RangeChoice) {
  if (row.group === null) return h('span', { class: 'muted' }, 'none');
  if (groupBy === 'session') return sessionLink(row, choice);
  if (groupBy === 'key' || groupBy === 'account' || groupBy === 'member') return row.label ?? h('code', null, row.group);
  return h('code', null, row.group);
}
