/**
 * Keys and usage inside an organisation. A member makes keys that spend the organisation's balance
 * and are charged to them; they see, change and revoke their own, an owner or admin every member's. Usage
 * reads by member: a member only their own (another member's is 404), an owner or admin anyone's;
 * the requests refused before they cost anything read by member the same way.
 */
import type Router from '@koa/router';
import { issueApiKey } from '../../auth/issue-key';
import { isValidKeyName } from '../../auth/key-name';
import { formatUnits } from '../../billing/money';
import type { ApiKeyRecord, ChargeFilter } from '../../store/store';
import type { Membership } from '../../store/orgs';
import { ApiError, invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import type { AdminDeps, ApiContext, ApiState } from '../context';
import { optionalAmount, optionalFutureDate, optionalModelList, optionalRateLimits, optionalString } from '../fields';
import { readJsonObject } from '../json-body';
import { callerMembership, may, memberScope } from '../org-access';
import { orgKeyView } from '../org-views';
import { refusalUsageView, usageView } from '../views';
import type { RefusalFilter } from '../../store/refusals';
import { audit } from '../audit';
import { keyCreated, keyLimitsChanged, keyRevoked } from '../../audit/states';
import { changeKeyLimits } from '../key-limit-change';
import { dateParam, limitParam } from './query';

/** Active keys one member may hold in one organisation, as for an account's own. */
const MAX_ACTIVE_KEYS = 200;
const PAGE_LIMIT = 1000;

/** The keys of the organisation the caller may see: their own, or everyone's for an owner or admin. */
async function visibleKeys(deps: AdminDeps, membership: Membership): Promise<ApiKeyRecord[]> {
  const keys = await deps.store.listKeys({ accountId: membership.organisationId });
  return may(membership.role, 'manage_members') ? keys : keys.filter((key) => key.memberAccountId === membership.accountId);
}

/** The key in the path (`:keyId`) if the caller may see it; 404 otherwise, as for one that does not exist. */
async function visibleKey(deps: AdminDeps, ctx: ApiContext, membership: Membership): Promise<ApiKeyRecord> {
  const id = (ctx.params as Readonly<Record<string, string>>).keyId;
  const key = (await visibleKeys(deps, membership)).find((candidate) => candidate.id === id);
  if (key === undefined) throw notFound('This key');
  return key;
}

/** Member names by account id, for the keys' `member_name`. */
async function memberNames(deps: AdminDeps, organisationId: string): Promise<Map<string, string>> {
  return new Map((await deps.store.orgs.listMembers(organisationId)).map((member) => [member.accountId, member.accountName]));
}

export function orgKeyRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const knownModels = () => new Set(Object.keys(deps.runtime.current.config.models));

  router.get('/orgs/:id/keys', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const [keys, names] = await Promise.all([visibleKeys(deps, membership), memberNames(deps, membership.organisationId)]);
    ctx.body = { keys: keys.reverse().map((key) => orgKeyView(key, names)) };
  });

  router.post('/orgs/:id/keys', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const body = await readJsonObject(ctx);
    const name = optionalString(body, 'name', 'A name', 60);
    if (name !== null && !isValidKeyName(name)) throw invalid('name', 'A name cannot hold control characters (line breaks, escape sequences, direction overrides).');
    const expiresAt = optionalFutureDate(body, 'expires_at', 'The expiry');
    const spendLimit = optionalAmount(body, 'spend_limit', 'The spend limit') ?? null;
    const models = optionalModelList(body, 'models', knownModels()) ?? null;
    const rateLimits = optionalRateLimits(body, 'rate_limits') ?? null;
    const own = (await deps.store.listKeys({ accountId: membership.organisationId })).filter((key) => key.memberAccountId === membership.accountId && key.revokedAt === null);
    if (own.length >= MAX_ACTIVE_KEYS) throw new ApiError('conflict', `A member holds at most ${MAX_ACTIVE_KEYS} keys in one organisation; revoke one first.`);
    const issued = await issueApiKey(deps.store, {
      accountId: membership.organisationId,
      memberAccountId: membership.accountId,
      name,
      expiresAt,
      spendLimit,
      models,
      rateLimits,
    });
    deps.logger.info({ organisation: membership.organisationId, member: membership.accountId, key: issued.record.id }, 'console: organisation key created');
    await audit(deps, ctx, keyCreated(issued.record));
    ctx.status = 201;
    ctx.body = { key: orgKeyView(issued.record, new Map([[membership.accountId, membership.accountName]])), secret: issued.key };
  });

  // As PATCH /keys/{id} for a personal key: the key's member, or an owner or admin, changes its limits.
  router.patch('/orgs/:id/keys/:keyId', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const key = await visibleKey(deps, ctx, membership);
    await changeKeyLimits(deps, ctx, key);
    const changed = await visibleKey(deps, ctx, membership);
    await audit(deps, ctx, keyLimitsChanged(key, changed));
    ctx.body = { key: orgKeyView(changed, await memberNames(deps, membership.organisationId)) };
  });

  router.delete('/orgs/:id/keys/:keyId', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const key = await visibleKey(deps, ctx, membership);
    await deps.store.revokeKey(key.id);
    const revoked = await visibleKey(deps, ctx, membership);
    await audit(deps, ctx, keyRevoked(key, revoked.revokedAt));
    ctx.body = { key: orgKeyView(revoked, await memberNames(deps, membership.organisationId)) };
  });

  router.get('/orgs/:id/usage', signedIn(deps), async (ctx) => {
    const membership = await callerMembership(deps, ctx);
    const memberAccountId = memberScope(ctx, membership);
    const since = dateParam(ctx.query.since, 'since', 'start');
    const until = dateParam(ctx.query.until, 'until', 'end');
    const filter: ChargeFilter = {
      accountId: membership.organisationId,
      ...(memberAccountId === undefined ? {} : { memberAccountId }),
      ...(since === undefined ? {} : { since }),
      ...(until === undefined ? {} : { until }),
    };
    const limit = limitParam(ctx.query.limit, 100, PAGE_LIMIT);
    // The same scope for the refusals: a refusal of a member's key records the member, as a charge does.
    const refusalFilter: RefusalFilter = filter;
    const [charges, totals, refusals, refused, keys, members] = await Promise.all([
      deps.store.listCharges({ ...filter, limit }),
      deps.store.chargeTotals(filter),
      deps.store.refusals.list({ ...refusalFilter, limit }),
      deps.store.refusals.summary(refusalFilter),
      deps.store.listKeys({ accountId: membership.organisationId }),
      deps.store.orgs.listMembers(membership.organisationId),
    ]);
    const keyNames = new Map(keys.map((key) => [key.id, key.name]));
    const names = new Map(members.map((member) => [member.accountId, member.accountName]));
    const memberOf = (id: string | null | undefined) => ({ member_id: id ?? null, member_name: names.get(id ?? '') ?? null });
    ctx.body = {
      member_id: memberAccountId ?? null,
      totals: { requests: totals.requests, cost: formatUnits(totals.cost), failed: totals.failed, refused: refused.reduce((sum, row) => sum + row.requests, 0) },
      charges: charges.map((charge) => ({ ...usageView(charge, keyNames), ...memberOf(charge.memberAccountId) })),
      refusals: refusals.map((refusal) => ({ ...refusalUsageView(refusal, keyNames), ...memberOf(refusal.memberAccountId) })),
    };
  });
}
