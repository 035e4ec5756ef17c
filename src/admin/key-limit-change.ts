/**
 * A key's owner changing its limits (`PATCH /api/keys/{id}`, and a key in an organisation through
 * `PATCH /api/orgs/{id}/keys/{keyId}`): one reading of the body and one rule for both, so a key made
 * in an organisation takes exactly what a personal key takes. The owner tightens the operator's
 * limits at most: a looser value is refused, saying both; a cleared one falls back to the operator's.
 */
import { budgetProblem, looserLimit, ownerChange } from '../auth/key-limits';
import type { ApiKeyRecord } from '../store/store';
import { invalid } from './api-error';
import type { AdminDeps, ApiContext } from './context';
import { optionalAmount, optionalBudget, optionalModelList, optionalNetworkList, optionalRateLimits } from './fields';
import { readJsonObject } from './json-body';

/** Reads the change from the request body, refuses what loosens the operator's limits, and stores it. */
export async function changeKeyLimits(deps: AdminDeps, ctx: ApiContext, key: ApiKeyRecord): Promise<void> {
  const knownModels = new Set(Object.keys(deps.runtime.current.config.models));
  const body = await readJsonObject(ctx);
  const requested = {
    spendLimit: optionalAmount(body, 'spend_limit', 'The spend limit'),
    models: optionalModelList(body, 'models', knownModels),
    rateLimits: optionalRateLimits(body, 'rate_limits'),
    budget: optionalBudget(body, 'budget'),
    sessionBudget: optionalAmount(body, 'session_budget', 'The session budget'),
    allowedNetworks: optionalNetworkList(body, 'allowed_networks'),
  };
  const problem = budgetProblem(requested.budget, key.operatorLimits);
  if (problem !== null) throw invalid('budget', problem);
  const looser = looserLimit(requested, key.operatorLimits);
  if (looser !== null) throw invalid(looser.field, looser.message);
  await deps.store.setKeyLimits(key.id, ownerChange(requested, key.operatorLimits));
}
