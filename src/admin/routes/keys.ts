/** The signed-in account's API keys: list, Add Token, change limits (key-limit-change.ts), revoke. Only ever its own. */
import type Router from '@koa/router';
import { issueApiKey } from '../../auth/issue-key';
import { isValidKeyName } from '../../auth/key-name';
import { isPlaygroundKey, passesForPlaygroundKey, PLAYGROUND_KEY_NAME, PLAYGROUND_KEY_TTL_MS } from '../../auth/playground-key';
import type { ApiKeyRecord } from '../../store/store';
import { ApiError, invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { optionalAmount, optionalFutureDate, optionalModelList, optionalNetworkList, optionalRateLimits, optionalString } from '../fields';
import { changeKeyLimits } from '../key-limit-change';
import { readJsonObject } from '../json-body';
import { activityView, keyView } from '../views';
import { audit } from '../audit';
import { keyCreated, keyLimitsChanged, keyRevoked } from '../../audit/states';

function startOfUtcDay(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}

function startOfUtcMonth(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** Active keys an account may hold; far more than a person uses, few enough to list on one page. */
const MAX_ACTIVE_KEYS = 200;

export function keyRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const knownModels = () => new Set(Object.keys(deps.runtime.current.config.models));

  /** The caller's key by id; another account's key is "not found", so ids of others reveal nothing. */
  async function ownKey(ctx: ApiContext): Promise<ApiKeyRecord> {
    const { account } = callerOf(ctx);
    const key = (await deps.store.listKeys({ accountId: account.id })).find((candidate) => candidate.id === (ctx.params as Readonly<Record<string, string>>).id);
    if (key === undefined) throw notFound('This key');
    return key;
  }

  router.get('/keys', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const now = new Date();
    const [keys, activity] = await Promise.all([
      deps.store.listKeys({ accountId: account.id }),
      deps.store.keyActivity(account.id, startOfUtcDay(now), startOfUtcMonth(now)),
    ]);
    const byKey = new Map(activity.map((entry) => [entry.keyId, entry]));
    ctx.body = { keys: keys.reverse().map((key) => ({ ...keyView(key), ...activityView(byKey.get(key.id)) })) };
  });

  router.post('/keys', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const name = optionalString(body, 'name', 'A name', 60);
    if (name !== null && !isValidKeyName(name)) throw invalid('name', 'A name cannot hold control characters (line breaks, escape sequences, direction overrides).');
    const expiresAt = optionalFutureDate(body, 'expires_at', 'The expiry');
    if (passesForPlaygroundKey(name, expiresAt, new Date())) throw invalid('name', `A key named ${PLAYGROUND_KEY_NAME} that expires within the hour is the playground's; choose another name or a later expiry.`);
    const spendLimit = optionalAmount(body, 'spend_limit', 'The spend limit') ?? null;
    const models = optionalModelList(body, 'models', knownModels()) ?? null;
    const rateLimits = optionalRateLimits(body, 'rate_limits') ?? null;
    const allowedNetworks = optionalNetworkList(body, 'allowed_networks') ?? null;
    const active = (await deps.store.listKeys({ accountId: account.id })).filter((key) => key.revokedAt === null);
    if (active.length >= MAX_ACTIVE_KEYS) throw new ApiError('conflict', `An account holds at most ${MAX_ACTIVE_KEYS} keys; revoke one first.`);
    const issued = await issueApiKey(deps.store, { accountId: account.id, name, expiresAt, spendLimit, models, rateLimits, allowedNetworks });
    deps.logger.info({ account: account.name, key: issued.record.id }, 'console: key created');
    await audit(deps, ctx, keyCreated(issued.record));
    ctx.status = 201;
    ctx.body = { key: keyView(issued.record), secret: issued.key };
  });

  // The console's playground calls /v1 like any client, with a key of the signed-in account that
  // expires within the hour: billed like any request, and only ever usable by whoever holds it.
  router.post('/playground/key', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const listed = (await deps.store.listKeys({ accountId: account.id })).filter((key) => key.revokedAt === null && (key.expiresAt === null || key.expiresAt.getTime() > Date.now()));
    // One playground key per account: each visit's replaces the last visit's, so they do not pile up
    // in Tokens and Usage.
    const earlier = listed.filter(isPlaygroundKey);
    for (const key of earlier) {
      if (await deps.store.revokeKey(key.id)) await audit(deps, ctx, keyRevoked(key, new Date()));
    }
    const active = listed.length - earlier.length;
    if (active >= MAX_ACTIVE_KEYS) throw new ApiError('conflict', `An account holds at most ${MAX_ACTIVE_KEYS} keys; revoke one first.`);
    const issued = await issueApiKey(deps.store, { accountId: account.id, name: PLAYGROUND_KEY_NAME, expiresAt: new Date(Date.now() + PLAYGROUND_KEY_TTL_MS) });
    await audit(deps, ctx, keyCreated(issued.record));
    ctx.status = 201;
    ctx.body = { key: keyView(issued.record), secret: issued.key };
  });

  router.patch('/keys/:id', signedIn(deps), async (ctx) => {
    const key = await ownKey(ctx);
    await changeKeyLimits(deps, ctx, key);
    const changed = await ownKey(ctx);
    await audit(deps, ctx, keyLimitsChanged(key, changed));
    ctx.body = { key: keyView(changed) };
  });

  router.delete('/keys/:id', signedIn(deps), async (ctx) => {
    const key = await ownKey(ctx);
    await deps.store.revokeKey(key.id);
    deps.logger.info({ account: callerOf(ctx).account.name, key: key.id }, 'console: key revoked');
    const revoked = await ownKey(ctx);
    await audit(deps, ctx, keyRevoked(key, revoked.revokedAt));
    ctx.body = { key: keyView(revoked) };
  });
}
