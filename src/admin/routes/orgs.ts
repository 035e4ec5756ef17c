/**
 * Organisations of the signed-in person: make one (they become its owner), list theirs, read one,
 * and manage its members (roles, the organisation's limits per member, removal). The roles are read
 * in org-access.ts; an organisation the caller is not in answers 404.
 */
import type Router from '@koa/router';
import { AccountExistsError, type Account } from '../../store/store';
import { MEMBER_ROLES, type Membership, type MemberRole } from '../../store/orgs';
import { ApiError, invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { accountName, optionalBudget, optionalModelList, optionalRateLimits } from '../fields';
import { readJsonObject, type JsonObject } from '../json-body';
import { callerMembership, callerWith, LAST_OWNER_MESSAGE, may, requireRoleChange } from '../org-access';
import { memberView, organisationView, type MemberSpend } from '../org-views';
import { PeriodCache } from '../../billing/budget-period';
import { checkOf } from '../../billing/budgets';
import { memberBudgetId } from '../../store/budget-owner';
import { audit } from '../audit';
import { memberLimitsChanged, memberRemoved, memberRoleChanged, organisationCreated } from '../../audit/org-states';

/** Organisations one person may own or belong to: plenty for a person, bounded for the list. */
const MAX_MEMBERSHIPS = 100;

export function memberRole(body: JsonObject, field = 'role'): MemberRole {
  const value = body[field];
  if (typeof value !== 'string' || !(MEMBER_ROLES as readonly string[]).includes(value)) throw invalid(field, `The role is one of ${MEMBER_ROLES.join(', ')}.`);
  return value as MemberRole;
}

export function orgRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const knownModels = () => new Set(Object.keys(deps.runtime.current.config.models));

  /** The member named in the path (`:accountId`) of the caller's organisation; 404 when none. */
  async function pathMember(ctx: ApiContext, organisationId: string): Promise<Membership> {
    const member = await deps.store.orgs.findMember(organisationId, (ctx.params as Readonly<Record<string, string>>).accountId);
    if (member === null) throw notFound('This member');
    return member;
  }

  async function organisationOf(id: string): Promise<Account> {
    const organisation = await deps.store.findAccountById(id);
    if (organisation === null) throw notFound('This organisation');
    return organisation;
  }

  router.get('/orgs', signedIn(deps), async (ctx) => {
    const memberships = await deps.store.orgs.organisationsOf(callerOf(ctx).account.id);
    const organisations = await Promise.all(memberships.map(async ({ organisation, role }) => organisationView(organisation, role, await deps.funds.balance(organisation.id))));
    ctx.body = { organisations };
  });

  router.post('/orgs', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    if (account.role !== 'admin' && (await deps.store.orgs.isOrganisation(account.id))) throw new ApiError('forbidden', 'An organisation cannot make organisations.');
    const body = await readJsonObject(ctx);
    const name = accountName(body);
    if ((await deps.store.orgs.organisationsOf(account.id)).length >= MAX_MEMBERSHIPS) throw new ApiError('conflict', `One account belongs to at most ${MAX_MEMBERSHIPS} organisations.`);
    let organisation: Account;
    try {
      organisation = await deps.store.orgs.createOrganisation({ name, ownerId: account.id });
    } catch (error) {
      if (error instanceof AccountExistsError) throw new ApiError('conflict', `The name "${name}" is taken; choose another.`, 'name');
      throw error;
    }
    await audit(deps, ctx, organisationCreated(organisation, account));
    ctx.status = 201;
    ctx.body = { organisation: organisationView(organisation, 'owner', { balance: 0n, held: 0n }) };
  });

  router.get('/orgs/:id', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const organisation = await organisationOf(membership.organisationId);
    ctx.body = { organisation: organisationView(organisation, membership.role, await deps.funds.balance(organisation.id)) };
  });

  /** What the member spent in their budget's current period (the book's figure, as the hold reads it); null without a budget. */
  async function budgetSpent(member: Membership): Promise<MemberSpend | null> {
    if (member.limits.budget === null) return null;
    const check = checkOf('member', memberBudgetId(member.organisationId, member.accountId), member.limits.budget, new Date(), new PeriodCache());
    const book = deps.runtime.current.chain.service('billing') ?? null;
    return { check, spent: book === null ? await deps.store.periodSpend(check.scope, check.id, check.start, check.end) : await book.budgetSpent(check) };
  }

  router.get('/orgs/:id/members', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const members = await deps.store.orgs.listMembers(membership.organisationId);
    // Everyone sees who is in the organisation; the limits of others (and their spend) only those who set them.
    ctx.body = {
      members: await Promise.all(
        members.map(async (member) => {
          if (!may(membership.role, 'manage_members') && member.accountId !== membership.accountId) return { ...memberView(member), limits: null };
          return memberView(member, await budgetSpent(member));
        }),
      ),
    };
  });

  router.patch('/orgs/:id/members/:accountId', signedIn(deps), async (ctx) => {
    const actor = await callerWith(deps, ctx, 'manage_members');
    const target = await pathMember(ctx, actor.organisationId);
    const body = await readJsonObject(ctx);
    const role = body.role === undefined ? null : memberRole(body);
    const limits = {
      ...(body.budget === undefined ? {} : { budget: optionalBudget(body, 'budget') ?? null }),
      ...(body.models === undefined ? {} : { models: optionalModelList(body, 'models', knownModels()) ?? null }),
      ...(body.rate_limits === undefined ? {} : { rateLimits: optionalRateLimits(body, 'rate_limits') ?? null }),
    };
    if (role !== null && role !== target.role) {
      requireRoleChange(actor, target, role);
      const changed = await deps.store.orgs.setMemberRole(actor.organisationId, target.accountId, role);
      if (changed === 'last_owner') throw new ApiError('conflict', LAST_OWNER_MESSAGE, 'role');
      if (changed === 'not_found') throw notFound('This member');
      await audit(deps, ctx, memberRoleChanged(target, role));
    }
    if (Object.keys(limits).length > 0) {
      await deps.store.orgs.setMemberLimits(actor.organisationId, target.accountId, limits);
      const after = await pathMember(ctx, actor.organisationId);
      await audit(deps, ctx, memberLimitsChanged(target, after));
    }
    ctx.body = { member: memberView(await pathMember(ctx, actor.organisationId)) };
  });

  // An admin removes a member; anyone may leave. The member's keys in the organisation end with them.
  router.delete('/orgs/:id/members/:accountId', signedIn(deps), async (ctx) => {
    const actor = await callerMembership(deps, ctx);
    const leaving = (ctx.params as Readonly<Record<string, string>>).accountId === actor.accountId;
    if (!leaving && !may(actor.role, 'manage_members')) throw notFound('This organisation');
    const target = leaving ? actor : await pathMember(ctx, actor.organisationId);
    if (!leaving) requireRoleChange(actor, target, null);
    const removed = await deps.store.orgs.removeMember(actor.organisationId, target.accountId, new Date());
    if (removed === 'last_owner') throw new ApiError('conflict', LAST_OWNER_MESSAGE);
    if (removed === 'not_found') throw notFound('This member');
    deps.logger.info({ organisation: actor.organisationId, member: target.accountId }, 'console: member removed, their keys revoked');
    await audit(deps, ctx, memberRemoved(target));
    ctx.body = { member: memberView(target) };
  });
}
