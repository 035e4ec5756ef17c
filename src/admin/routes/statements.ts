/**
 * Monthly statements: an account's own (`/statements`), an organisation's for its owners and billing
 * members (`/orgs/{id}/statements`; anyone else in it gets 404), and any account's for
 * administrators (`/admin/statements`). Asking for the list issues every closed month not issued yet (issuing is
 * idempotent and derived from the ledger, so the GET changes nothing anyone can see but the list
 * itself). A statement is answered as JSON, CSV, a printable HTML page or a PDF.
 */
import type Router from '@koa/router';
import type { StoredStatement } from '../../store/statements';
import { readDocument } from '../../statements/document';
import { issueClosedMonths } from '../../statements/issue';
import { statementCsv } from '../../statements/render-csv';
import { STATEMENT_HTML_CSP, statementHtml } from '../../statements/render-html';
import { statementSummaryView, statementView } from '../../statements/views';
import { invalid, notFound } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import { attachment } from '../csv';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { callerWith } from '../org-access';
import { single } from './query';

const FORMATS = ['json', 'csv', 'html', 'pdf'] as const;
type Format = (typeof FORMATS)[number];

function formatOf(ctx: ApiContext): Format {
  const format = single(ctx.query.format, 'format') ?? 'json';
  if (!(FORMATS as readonly string[]).includes(format)) throw invalid('format', `format is one of ${FORMATS.join(', ')}.`);
  return format as Format;
}

/** Answers one statement in the format asked for. */
async function answer(ctx: ApiContext, stored: StoredStatement): Promise<void> {
  const format = formatOf(ctx);
  // A row that no longer matches its hash throws: logged, and answered 503, never shown.
  const document = readDocument(stored);
  switch (format) {
    case 'json':
      ctx.body = { statement: statementView(stored, document) };
      return;
    case 'csv':
      attachment(ctx, `${stored.number}.csv`);
      ctx.body = statementCsv(document);
      return;
    case 'html':
      ctx.set('content-type', 'text/html; charset=utf-8');
      ctx.set('content-security-policy', STATEMENT_HTML_CSP);
      ctx.body = statementHtml(document);
      return;
    case 'pdf': {
      // Loaded here, not at start: a gateway that never prints one never loads pdfkit.
      const { statementPdf } = await import('../../statements/render-pdf.js');
      ctx.set('content-type', 'application/pdf');
      ctx.set('content-disposition', `attachment; filename="${stored.number}.pdf"`);
      ctx.body = await statementPdf(document);
      return;
    }
  }
}

export function statementRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const idOf = (ctx: ApiContext) => (ctx.params as Readonly<Record<string, string>>).id;

  router.get('/statements', signedIn(deps), async (ctx) => {
    const account = callerOf(ctx).account;
    const issued = await issueClosedMonths(deps.store, deps.runtime.current.config, account, new Date());
    ctx.body = { statements: issued.map(statementSummaryView) };
  });

  router.get('/statements/:id', signedIn(deps), async (ctx) => {
    const stored = await deps.store.statements.find(idOf(ctx));
    // Another account's statement is answered as one that does not exist.
    if (stored === null || stored.accountId !== callerOf(ctx).account.id) throw notFound('This statement');
    await answer(ctx, stored);
  });

  router.get('/orgs/:id/statements', signedIn(deps), async (ctx) => {
    const membership = await callerWith(deps, ctx, 'read_statements');
    const organisation = await deps.store.findAccountById(membership.organisationId);
    if (organisation === null) throw notFound('This organisation');
    const issued = await issueClosedMonths(deps.store, deps.runtime.current.config, organisation, new Date());
    ctx.body = { statements: issued.map(statementSummaryView) };
  });

  router.get('/orgs/:id/statements/:statementId', signedIn(deps), async (ctx) => {
    const membership = await callerWith(deps, ctx, 'read_statements');
    const stored = await deps.store.statements.find((ctx.params as Readonly<Record<string, string>>).statementId);
    if (stored === null || stored.accountId !== membership.organisationId) throw notFound('This statement');
    await answer(ctx, stored);
  });

  router.get('/admin/statements', signedIn(deps), adminOnly, async (ctx) => {
    const id = single(ctx.query.account, 'account');
    if (id === undefined) throw invalid('account', 'Name the account: ?account=<account id>.');
    const account = await deps.store.findAccountById(id);
    if (account === null) throw notFound('This account');
    const issued = await issueClosedMonths(deps.store, deps.runtime.current.config, account, new Date());
    ctx.body = { statements: issued.map(statementSummaryView) };
  });

  router.get('/admin/statements/:id', signedIn(deps), adminOnly, async (ctx) => {
    const stored = await deps.store.statements.find(idOf(ctx));
    if (stored === null) throw notFound('This statement');
    await answer(ctx, stored);
  });
}
