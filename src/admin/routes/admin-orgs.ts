/** The operator's view of organisations: every one with its balance, and each one's members and their limits. */
import type Router from '@koa/router';
import { notFound } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import type { AdminDeps, ApiState } from '../context';
import { memberView, organisationView } from '../org-views';

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
    ctx.body = { members: (await deps.store.orgs.listMembers(id)).map(memberView) };
  });
}
