// Which page each console path shows.
import type { Page } from './page.js';
import { accountPage } from './pages/account.js';
import { adminAccountsPage } from './pages/admin-accounts.js';
import { adminAuditPage } from './pages/admin-audit.js';
import { analyticsPage } from './pages/analytics.js';
import { adminGatewayPage } from './pages/admin-gateway.js';
import { playgroundPage } from './pages/playground.js';
import { requestPage } from './pages/request.js';
import { sessionPage, sessionsPage } from './pages/sessions.js';
import { adminCodesPage } from './pages/admin-codes.js';
import { adminProvidersPage } from './pages/admin-providers.js';
import { dashboardPage } from './pages/dashboard.js';
import { pricesPage } from './pages/prices.js';
import { tokensPage } from './pages/token.js';
import { topupPage } from './pages/topup.js';
import { paymentsPage } from './pages/payments.js';
import { statementsPage } from './pages/statements.js';
import { adminPaymentsPage } from './pages/admin-payments.js';
import { usagePage } from './pages/usage.js';
import { membersPage } from './pages/members.js';
import { joinPage, JOIN_PATH } from './pages/join.js';
import { adminOrgsPage } from './pages/admin-orgs.js';

const ROUTES: ReadonlyMap<string, Page> = new Map([
  ['/console', dashboardPage],
  ['/console/token', tokensPage],
  ['/console/topup', topupPage],
  ['/console/payments', paymentsPage],
  ['/console/statements', statementsPage],
  ['/console/admin/payments', adminPaymentsPage],
  ['/console/usage', usagePage],
  ['/console/analytics', analyticsPage],
  ['/console/sessions', sessionsPage],
  ['/console/session', sessionPage],
  ['/console/request', requestPage],
  ['/console/playground', playgroundPage],
  ['/console/prices', pricesPage],
  ['/console/account', accountPage],
  ['/console/members', membersPage],
  [JOIN_PATH, joinPage],
  ['/console/admin/orgs', adminOrgsPage],
  ['/console/admin/accounts', adminAccountsPage],
  ['/console/admin/codes', adminCodesPage],
  ['/console/admin/providers', adminProvidersPage],
  ['/console/admin/audit', adminAuditPage],
  ['/console/admin/gateway', adminGatewayPage],
]);

export function findPage(path: string): Page | undefined {
  return ROUTES.get(path);
}
