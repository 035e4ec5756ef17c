/**
 * The operator's view of organisations (every one with its balance, each one's members and their
 * limits), and the operator's limits on an account or organisation: they bind every key it has or
 * makes, beside each key's own (src/auth/bound-key.ts).
 */
import type Router from '@koa/router';
import { changedOperatorLimits } from '../../auth/key-limits';
import type { OperatorLimits } from '../../store/store';
import { notFound } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import type { AdminDeps, ApiState } from '../context';
import { optionalModelList, optionalRateLimits } from '../fields';
import { readJsonObject } from '../json-body';
import { memberView, organisationView } from '../org-views';
import { audit } from '../audit';

function accountLimitsView(limits: OperatorLimits | null) {
  return { models: limits?.models ?? null, rate_limits: limits?.rateLimits ?? null };
}

export function adminOrgRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const admin = [signedIn(deps), adminOnly] as const;

  router.get('/admin/orgs', ...admin, async (ctx) => {
    const organisations = await deps.store.orgs.listOrganisations();
    ctx.body = {
      organisations: await Promise.all(
        organisations.map(async (organisation) => ({
          ...organisationView(organisation, null, await deps.funds.balance(organisation.id)),
          members: (await deps.store.orgs.listMembers(organisation.id)).length,
        })),
      ),
    };
  });

  router.get('/admin/orgs/:id/members', ...admin, async (ctx) => {
    const id = (ctx.params as Readonly<Record<string, string>>).id;
    if (!(await deps.store.orgs.isOrganisation(id))) throw notFound('This organisation');
    ctx.body = { members: (await deps.store.orgs.listMembers(id)).map((member) => memberView(member)) };
  });

  router.patch('/admin/accounts/:id/limits', ...admin, async (ctx) => {
    const id = (ctx.params as Readonly<Record<string, string>>).id;
    const account = await deps.store.findAccountById(id);
    if (account === null) throw notFound('This account');
    const body = await readJsonObject(ctx);
    const change = {
      models: optionalModelList(body, 'models', new Set(Object.keys(deps.runtime.current.config.models))),
      rateLimits: optionalRateLimits(body, 'rate_limits'),
    };
    const before = await deps.store.accountOperatorLimits(id);
    const after = changedOperatorLimits(before, change);
    await deps.store.setAccountOperatorLimits(id, after);
    await audit(deps, ctx, { action: 'account.limits', target: id, accountId: id, before: accountLimitsView(before), after: accountLimitsView(after) });
    ctx.body = { account_id: id, limits: accountLimitsView(after) };
  });
}
