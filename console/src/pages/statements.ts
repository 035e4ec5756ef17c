// /console/statements — the account's monthly statements: how each month opened and closed, with
// the printable page (a new tab, to print or save as PDF), the CSV and the PDF of each. The list is
// asked of the API, which issues any closed month not issued yet, so a month appears here once it
// has closed without anyone running anything. Acting for an organisation, its statements
// (GET /api/orgs/{id}/statements) for its owners and billing members; its admins and members are
// told theirs are the personal account's.
import { actingOrganisationLoaded } from '../acting.js';
import { apiGet } from '../api.js';
import { h } from '../dom.js';
import { loadInto } from '../load.js';
import { currency } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { dataTable } from '../table.js';
import type { Organisation, StatementSummary } from '../types.js';
import { money, pageHeading, section } from '../ui.js';

const EMPTY_TEXT = 'No statements yet. Each calendar month gets one once it has ended, so your first appears early next month.';

/** "2026-11" → "November 2026": the month is a UTC calendar month, so it is named in UTC. */
function monthName(month: string): string {
  const start = new Date(`${month}-01T00:00:00Z`);
  if (Number.isNaN(start.getTime())) return month;
  return start.toLocaleDateString(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' });
}

/**
 * An amount as the rest of the console shows money; a statement issued in another currency than the
 * gateway's now keeps the statement's own text, since it was issued in that one.
 */
function statementMoney(statement: StatementSummary, amount: StatementSummary['closing'], testId: string): HTMLElement {
  if (statement.currency.toUpperCase() === currency()) return money(amount.exact, testId);
  return h('span', { class: 'money', title: amount.exact, 'data-testid': testId }, amount.shown);
}

/** The three ways to have a statement; each link names its statement for screen readers. */
function documents(statement: StatementSummary, where: string): HTMLElement {
  const base = `${where}/${encodeURIComponent(statement.id)}?format=`;
  const which = () => h('span', { class: 'visually-hidden' }, ` of ${statement.number}`);
  return h('span', { class: 'statement-links' },
    h('a', { href: `${base}html`, target: '_blank', rel: 'noopener', 'data-testid': 'statement-html' },
      'Print', which(), h('span', { class: 'visually-hidden' }, ' (opens in a new tab)')),
    ' · ',
    h('a', { href: `${base}csv`, download: `${statement.number}.csv`, 'data-testid': 'statement-csv' }, 'CSV', which()),
    ' · ',
    h('a', { href: `${base}pdf`, download: `${statement.number}.pdf`, 'data-testid': 'statement-pdf' }, 'PDF', which()));
}

function statementTable(statements: readonly StatementSummary[], where: string): HTMLElement {
  return dataTable<StatementSummary>({
    caption: 'Monthly statements',
    hideCaption: true,
    testId: 'statements-table',
    rows: statements,
    emptyText: EMPTY_TEXT,
    columns: [
      { label: 'Number', pin: 'start', cell: (s) => h('span', { 'data-testid': 'statement-number' }, s.number) },
      { label: 'Month', cell: (s) => monthName(s.month) },
      { label: 'Opening', numeric: true, cell: (s) => statementMoney(s, s.opening, 'statement-opening') },
      { label: 'Closing', numeric: true, cell: (s) => statementMoney(s, s.closing, 'statement-closing') },
      { label: 'Statement', cell: (s) => documents(s, where) },
    ],
  });
}

/** Owners and billing members read an organisation's statements; its admins and members do not. */
function readsStatements(organisation: Organisation): boolean {
  return organisation.role === 'owner' || organisation.role === 'billing';
}

export const statementsPage: Page = {
  title: 'Statements',
  render(context: PageContext) {
    const lead = h('span');
    const list = h('div');
    const whose = h('p', { class: 'hint', 'data-testid': 'statements-whose' });
    context.root.append(pageHeading('Statements', lead), section('Monthly statements', whose, list));
    void actingOrganisationLoaded().then((organisation) => {
      const theirs = organisation !== null && readsStatements(organisation);
      lead.textContent = theirs
        ? `One statement a calendar month (UTC) for ${organisation.name}: what its balance opened at, what moved it (each member's charges among it), and what it closed at. Issued once the month has ended, and never changed.`
        : 'One statement a calendar month (UTC): what your balance opened at, what moved it, and what it closed at. Issued once the month has ended, and never changed.';
      // Not the organisation's unless the role reads them: say so rather than let the personal
      // account's pass for the organisation's.
      if (organisation !== null) {
        whose.textContent = theirs
          ? `${organisation.name}'s statements.`
          : `These are your personal account's statements; ${organisation.name}'s are for its owners and billing members.`;
      }
      const where = theirs ? `/api/orgs/${encodeURIComponent(organisation.id)}/statements` : '/api/statements';
      void loadInto(list,
        () => apiGet<{ statements: StatementSummary[] }>(where, { signal: context.signal }),
        (data) => statementTable(data.statements, where));
    });
  },
};
