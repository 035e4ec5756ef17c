/**
 * Administrators and another account's keys: the list, and the operator's limits on one key (models,
 * rates, spend, networks, budget, session budget). The owner can tighten these, never loosen or clear them, as when
 * they are set with `tollgate key limits`.
 */
import type Router from '@koa/router';
import { changedOperatorLimits, operatorChange } from '../../auth/key-limits';
import type { ApiKeyRecord } from '../../store/store';
import { notFound } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { optionalAmount, optionalBudget, optionalModelList, optionalNetworkList, optionalRateLimits } from '../fields';
import { readJsonObject } from '../json-body';
import { keyView } from '../views';
import { audit } from '../audit';
import { keyLimitsChanged } from '../../audit/states';

export function adminKeyRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const admin = [signedIn(deps), adminOnly] as const;
  const params = (ctx: ApiContext) => ctx.params as Readonly<Record<string, string>>;

  /** The store has no lookup of one key by id; an administrator's edit is rare enough to scan. */
  async function keyParam(ctx: ApiContext): Promise<ApiKeyRecord> {
    const key = (await deps.store.listKeys()).find((candidate) => candidate.id === params(ctx).id);
    if (key === undefined) throw notFound('This key');
    return key;
  }

  router.get('/admin/accounts/:id/keys', ...admin, async (ctx) => {
    const account = await deps.store.findAccountById(params(ctx).id);
    if (account === null) throw notFound('This account');
    const keys = await deps.store.listKeys({ accountId: account.id });
    ctx.body = { keys: keys.reverse().map((key) => keyView(key)) };
  });

  router.patch('/admin/keys/:id', ...admin, async (ctx) => {
    const key = await keyParam(ctx);
    const body = await readJsonObject(ctx);
    const change = {
      spendLimit: optionalAmount(body, 'spend_limit', 'The spend limit'),
      models: optionalModelList(body, 'models', new Set(Object.keys(deps.runtime.current.config.models))),
      rateLimits: optionalRateLimits(body, 'rate_limits'),
      allowedNetworks: optionalNetworkList(body, 'allowed_networks'),
      budget: optionalBudget(body, 'budget'),
      sessionBudget: optionalAmount(body, 'session_budget', 'The session budget'),
    };
    const operator = changedOperatorLimits(key.operatorLimits, change);
    await deps.store.setKeyLimits(key.id, operatorChange(key, operator));
    const changed = await keyParam(ctx);
    deps.logger.info({ key: key.id, account: key.accountId, by: callerOf(ctx).account.name }, 'console: operator limits changed');
    await audit(deps, ctx, keyLimitsChanged(key, changed));
    ctx.body = { key: keyView(changed) };
  });
}
