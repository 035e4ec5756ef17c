/**
 * Authenticates the Tollgate key (`sk-…`) of every request and fills `ctx.state.auth`. Both endpoint families
 * accept both headers (docs/decisions.md#d7-both-key-headers-on-every-endpoint): the Anthropic SDK 1.x sends
 * Bearer, Claude Code and SDK 0.x send `x-api-key`. Then authorizes what the key asks for (`RULES`), once the
 * request is read and before any limit or hold is taken.
 */
import { hashApiKey, keysEqual, parsePresentedKey } from '../../src/auth/keys';
import { keyStatus } from '../../src/auth/issue-key';
import { AuthFailureLimiter } from '../../src/auth/failure-limiter';
import { KeyCache } from '../../src/auth/key-cache';
import { boundKey, limitedAbove, modelRefusedBy } from '../../src/auth/bound-key';
import { NetworkList } from '../../src/auth/networks';
import type { GatewayContext, Next, ParsedRequest } from '../../src/kernel/context';
import { need } from '../../src/kernel/need';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginDefinition } from '../kit';
import type { Account, ApiKeyRecord, KeyIdentity } from '../../src/store/store';

/** The auth plugin's slot: who the request's key belongs to. */
export interface AuthState {
  readonly account: Account;
  /** The key with the model lists above it (its account's, its member's) folded in (src/auth/bound-key.ts). */
  readonly key: ApiKeyRecord;
  /**
   * The identity as the store gave it, when a level above the key limits it: the limits of each
   * level, for the rate buckets above the key and for refusals that name the level.
   */
  readonly identity?: KeyIdentity;
}

declare module '../../src/kernel/context' {
  interface GatewayState {
    auth?: AuthState;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * One message for every failure (missing, malformed, unknown, revoked, expired), so the answer tells
 * a prober nothing and never echoes what was sent.
 */
function invalidKey(): GatewayError {
  return new GatewayError(
    'TOLLGATE_ERR_AUTH_INVALID_KEY',
    'Invalid or missing API key. Send your Tollgate key (sk-…) as "Authorization: Bearer <key>" or "x-api-key: <key>".',
  );
}

/** The key the client presented, in the order its family's SDKs send it. */
function presentedKey(ctx: GatewayContext): string | null {
  const bearer = BEARER.exec(ctx.get('authorization'))?.[1] ?? '';
  const apiKey = ctx.get('x-api-key');
  const value = ctx.state.endpoint.family === 'anthropic' ? apiKey || bearer : bearer || apiKey;
  return value === '' ? null : parsePresentedKey(value);
}

/**
 * The key store did not answer (a failover, a restart): the key could be valid, so neither a 401 nor
 * the gateway's own fault (500), but a 503 the SDKs retry, as billing answers when its book is away.
 */
function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError('TOLLGATE_ERR_AUTH_UNAVAILABLE', 'The key store is unavailable right now, so the API key could not be checked; retry shortly.', {
    cause,
    headers: { 'retry-after': '1' },
  });
}

function tooManyFailures(retryAfterSeconds: number): GatewayError {
  return new GatewayError('TOLLGATE_ERR_AUTH_TOO_MANY_FAILURES', `Too many invalid API keys from this address; retry in ${retryAfterSeconds} s.`, {
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}

/**
 * A rule of what an authenticated key may do with the request it sent: the error that refuses it, or
 * null. Rules run in order once the request is read and its model resolved, on every endpoint
 * (`count_tokens` included) and whichever plugins are enabled, before any rate-limit slot or hold is
 * taken; the first refusal is the answer.
 */
type Rule = (auth: AuthState, request: ParsedRequest, ctx: GatewayContext) => GatewayError | null;

/** A key given a list of models may use those and no other (the resolved id, so an alias cannot get around it). */
function modelAllowed({ key, identity }: AuthState, { model }: ParsedRequest): GatewayError | null {
  if (key.models === null || key.models.includes(model.id)) return null;
  const level = identity === undefined ? 'key' : (modelRefusedBy(identity, identity.key.models, model.id) ?? 'key');
  const who = { account: "The operator's limits on this account do not", member: "The organisation's limits for this member do not", key: 'This API key may not' }[level];
  const message = level === 'key' ? `${who} use the model '${model.id}'.` : `${who} allow the model '${model.id}'.`;
  return new GatewayError('TOLLGATE_ERR_MODEL_NOT_ALLOWED', message, { param: 'model', ...(level === 'key' ? {} : { refusedBy: level }) });
}

const RULES: readonly Rule[] = [modelAllowed];

/** A key's allowed networks, compiled: the owner's and the operator's (a request must be in each given). */
interface NetworkGate {
  readonly owner: NetworkList | null;
  readonly operator: NetworkList | null;
}

/**
 * Compiled once per key record: the key cache hands the same record to every request until the key
 * changes, so a request pays a map lookup and the prefix match, and allocates nothing.
 */
const GATES = new WeakMap<ApiKeyRecord, NetworkGate>();

function gateOf(key: ApiKeyRecord): NetworkGate {
  let gate = GATES.get(key);
  if (gate === undefined) {
    const operator = key.operatorLimits?.allowedNetworks;
    gate = {
      owner: key.allowedNetworks === null ? null : NetworkList.compile(key.allowedNetworks),
      operator: operator === undefined ? null : NetworkList.compile(operator),
    };
    GATES.set(key, gate);
  }
  return gate;
}

/**
 * A key limited to networks is refused from anywhere else, naming the address as Tollgate saw it
 * (after `server.trusted_proxy_hops`), so whoever runs the client can tell which address to allow.
 */
function checkNetworks(key: ApiKeyRecord, address: string): void {
  if (key.allowedNetworks === null && key.operatorLimits?.allowedNetworks === undefined) return;
  const gate = gateOf(key);
  if ((gate.owner === null || gate.owner.matches(address)) && (gate.operator === null || gate.operator.matches(address))) return;
  throw new GatewayError('TOLLGATE_ERR_AUTH_IP_NOT_ALLOWED', `This API key may not be used from ${address}; its allowed networks do not include it.`);
}

function usable({ key, account }: KeyIdentity, now: number): boolean {
  return keyStatus(key, now) === 'active' && !account.disabled;
}

export const authPlugin: PluginDefinition<'auth'> = {
  name: 'auth',
  priority: 2000,
  stage: 'auth',
  setup(config, { store }) {
    const cache = new KeyCache(config.cache_ttl_ms, config.cache_max_entries);
    const failures = new AuthFailureLimiter(config.failures_per_minute);

    return {
      service: undefined,
      handle: async function authPlugin(ctx: GatewayContext, next: Next) {
        const now = Date.now();
        const wait = failures.retryAfter(ctx.ip, now);
        // An address over the limit gets no store lookup (docs/faults.md#a7); but a key this gateway
        // already knows is valid still gets in, so one guesser behind a shared NAT does not lock out
        // everyone else behind it. The cache holds only keys that were found valid.
        const found = wait > 0 ? knownIdentity(ctx, now) : authenticate(ctx, now);
        // A cached key is answered without an await (most requests); only a store lookup is awaited.
        const identity = found instanceof Promise ? await found : found;
        if (identity === null && wait > 0) throw tooManyFailures(wait);
        if (identity === null) {
          failures.fail(ctx.ip, now);
          throw invalidKey();
        }
        // Before the body is read, and so before any rate-limit slot or hold.
        checkNetworks(identity.key, ctx.ip);
        const key = boundKey(identity);
        ctx.state.auth = limitedAbove(identity) ? { account: identity.account, key, identity } : { account: identity.account, key };
        await next();
      },
      authorize: function authorize(ctx: GatewayContext) {
        const auth = need(ctx, 'auth');
        const request = need(ctx, 'request');
        for (const rule of RULES) {
          const refusal = rule(auth, request, ctx);
          if (refusal !== null) throw refusal;
        }
      },
    };

    /** The identity behind the presented key from the cache alone, when it is there and usable. */
    function knownIdentity(ctx: GatewayContext, now: number): KeyIdentity | null {
      const key = presentedKey(ctx);
      if (key === null) return null;
      const identity = cache.get(key, store.keysRevision('turn'), now);
      return identity !== null && usable(identity, now) ? identity : null;
    }

    /** The identity behind the presented key when it is valid and usable, else null; a promise only when the store is asked. */
    function authenticate(ctx: GatewayContext, now: number): KeyIdentity | null | Promise<KeyIdentity | null> {
      const key = presentedKey(ctx);
      if (key === null) return null;
      const revision = store.keysRevision('turn');
      const identity = cache.get(key, revision, now);
      if (identity === null) return lookUp(key, revision, now);
      return usable(identity, now) ? identity : null;
    }

    /** A key the cache does not hold (or holds from an older revision), from the store. */
    async function lookUp(key: string, revision: number, now: number): Promise<KeyIdentity | null> {
      // Hashed only on a miss: a cached key was hashed and compared when it was found.
      const hash = hashApiKey(key);
      let found: KeyIdentity | null;
      try {
        found = await store.findKeyByHash(hash);
      } catch (error) {
        // The store is away: a key it confirmed before keeps working as it was then (a store outage
        // must not turn away paying clients); one never seen here cannot be checked.
        const known = cache.lastKnown(key);
        if (known === null) throw storeUnavailable(error);
        return usable(known, now) ? known : null;
      }
      if (found === null || !keysEqual(found.hash, hash)) {
        cache.forget(key);
        return null;
      }
      cache.set(key, found, revision, now);
      return usable(found, now) ? found : null;
    }
  },
};
