// /console/sessions — the account's client sessions, newest first; /console/session?id=…
// — one session summed over all its requests, with the requests themselves. Acting for an
// organisation, its sessions (GET /api/orgs/{id}/usage/sessions): a member's own, every member's
// or one member's for an owner or admin, each request with its member.
import { actingOrganisationLoaded, usageBase } from '../acting.js';
import { apiGet, withQuery } from '../api.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { dataTable } from '../table.js';
import type { Organisation, Usage, UsageGroup } from '../types.js';
import { count, money, pageHeading, timeEl } from '../ui.js';
import { choiceQuery, rangeForm, rangeFrom, rangeQuery, ratioText } from '../usage-range.js';
import { commonScale, formatMoney, toScaled } from '../money.js';
import { isGroupOfSessions, sessionLink } from '../session-link.js';

/** How often the list is read again while the page is open: agents spend by the second. */
const LIVE_REFRESH_MS = 5000;

/** A session's spend against the account's session budget: a bar, the percentage, and "capped" at 100 %. */
function capCell(cost: string, cap: string): HTMLElement {
  const scale = commonScale([cost, cap]);
  const amount = toScaled(cap, scale);
  const percent = amount === 0n ? 100 : Number((toScaled(cost, scale) * 1000n) / amount) / 10;
  const fill = h('div', { class: `budget-fill${percent >= 100 ? ' budget-full' : percent >= 80 ? ' budget-high' : ''}` });
  // Through the CSSOM: the console's content security policy refuses style attributes.
  fill.style.width = `${Math.min(100, percent)}%`;
  const label = `${formatMoney(cost)} of ${formatMoney(cap)}`;
  return h('div', { class: 'budget', 'data-testid': 'session-cap' },
    h('div', { class: 'budget-track', role: 'progressbar', 'aria-label': label, 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(Math.min(100, Math.round(percent))) }, fill),
    h('div', { class: 'budget-note' }, `${label} (${percent.toFixed(1)}%)${percent >= 100 ? ' · capped' : ''}`));
}

export const sessionsPage: Page = {
  title: 'Sessions',
  render(context: PageContext) {
    // The heading now, so the router's focus lands on it; the rest once the organisation is known.
    const lead = h('span');
    context.root.append(pageHeading('Sessions', lead));
    void actingOrganisationLoaded().then((organisation) => renderSessions(context, organisation, lead));
  },
};

function renderSessions(context: PageContext, organisation: Organisation | null, lead: HTMLElement): void {
  lead.textContent = organisation === null
    ? 'What each agent session cost: Claude Code and Codex send a session id with every request, and any client may send x-tollgate-session.'
    : `What each agent session cost ${organisation.name}, made with its tokens: Claude Code and Codex send a session id with every request, and any client may send x-tollgate-session.`;
  const formArea = h('div');
  const list = h('div');
  context.root.append(formArea, list);
  let current = rangeFrom(context.query);
  const show = (choice: ReturnType<typeof rangeFrom>) =>
    void loadInto(list,
      () => apiGet<{ sessions: UsageGroup[]; session_budget: string | null }>(withQuery(`${usageBase(organisation)}/sessions`, { ...rangeQuery(choice), limit: 100 }), { signal: context.signal }),
      (data) => dataTable({
        caption: 'Sessions, newest first',
        hideCaption: true,
        rows: data.sessions,
        emptyText: 'No sessions in this range.',
        testId: 'sessions-table',
        columns: [
          { label: 'Session', cell: (row) => sessionLink(row, choice) },
          { label: 'First request', cell: (row) => timeEl(row.first_at) },
          { label: 'Last request', cell: (row) => timeEl(row.last_at) },
          { label: 'Requests', cell: (row) => count(row.requests), numeric: true },
          { label: 'Models', cell: (row) => row.models ?? '—' },
          { label: 'Tokens', cell: (row) => count(row.input_tokens + row.cache_write_tokens + row.cache_write_1h_tokens + row.cache_read_tokens + row.output_tokens), numeric: true },
          { label: 'Cache hits', cell: (row) => ratioText(row.cache_hit_ratio), numeric: true },
          { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
          // Each session's spend against the account's session budget, when it has one.
          // The Playground's row sums many sessions: the cap is on each of them, so no bar.
          ...(data.session_budget === null ? [] : [{ label: 'Session budget', cell: (row: UsageGroup) => (isGroupOfSessions(row) ? '—' : capCell(row.cost, data.session_budget!)) }]),
        ],
      }));
  show(current);
  // Live: read again every few seconds while the page is open (its signal ends when it is left).
  const timer = setInterval(() => show(current), LIVE_REFRESH_MS);
  context.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  void rangeForm(current, context.signal, (choice) => {
    current = choice;
    replaceQuery(choiceQuery(choice));
    show(choice);
  }, organisation).then((form) => replace(formArea, form));
}

export const sessionPage: Page = {
  title: 'Session',
  render(context: PageContext) {
    const id = context.query.get('id') ?? '';
    const body = h('div');
    const name = h('code', null, id);
    context.root.append(pageHeading('Session', name), body);
    void actingOrganisationLoaded().then((organisation) => {
      const scope = organisation === null ? { account_id: context.query.get('account_id') } : { member_id: context.query.get('member_id') };
      const path = withQuery(`${usageBase(organisation)}/sessions/${encodeURIComponent(id)}`, { ...scope, limit: 1000 });
      void loadInto(body,
        () => apiGet<{ session: UsageGroup; requests: Array<Usage & { member_name?: string | null }> }>(path, { signal: context.signal }),
        (data) => {
          // The Playground's group goes by its label, its requests those of every visit.
          if (data.session.label !== null) replace(name, `${data.session.label}: every visit's requests`);
          return h('div', null,
            h('dl', { class: 'cards' },
              card('Cost', money(data.session.cost), 'session-cost'),
              card('Requests', count(data.session.requests), 'session-requests'),
              card('Cache hits', ratioText(data.session.cache_hit_ratio), 'session-cache'),
              card('Models', data.session.models ?? '—', 'session-models')),
            h('p', { class: 'muted' }, 'From ', timeEl(data.session.first_at), ' to ', timeEl(data.session.last_at), '.'),
            dataTable({
              caption: 'The session\'s requests, newest first',
              rows: data.requests,
              emptyText: 'No requests.',
              testId: 'session-requests-table',
              columns: [
                { label: 'Time', cell: (row) => h('a', { href: withQuery('/console/request', { id: row.request_id }) }, timeEl(row.created_at)) },
                // An organisation's requests are each some member's.
                organisation === null ? null : { label: 'Member', cell: (row) => row.member_name ?? '—' },
                { label: 'Model', cell: (row) => h('code', null, row.model) },
                { label: 'Token', cell: (row) => row.key_name ?? h('code', null, row.key_id) },
                { label: 'Input', cell: (row) => count(row.input_tokens), numeric: true },
                { label: 'Cache read', cell: (row) => count(row.cache_read_tokens), numeric: true },
                { label: 'Output', cell: (row) => count(row.output_tokens), numeric: true },
                { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
              ],
            }));
        });
    });
  },
};

function card(label: string, value: HTMLElement | string, testId: string): HTMLElement {
  return h('div', { class: 'card' }, h('dt', null, label), h('dd', { class: 'card-value', 'data-testid': testId }, value));
}
