/**
 * Lets requests cross to routes of another protocol. Failover targets of one model may speak
 * different protocols, so the choice (the passthrough or a translator) is made per target, by the
 * upstream plugin calling the `translation` slot this plugin fills; the translating itself lives in
 * `src/translators`.
 *
 * One request is answered here instead: token counting (`/v1/messages/count_tokens`, which Claude
 * Code calls) for an OpenAI-family model, which has no such endpoint upstream. The prompt is counted
 * with the o200k_base tokenizer, the encoding of OpenAI's current models.
 */
import type { Logger } from 'pino';
import type { GatewayConfig } from '../../src/config/types';
import type { GatewayContext, Next } from '../../src/kernel/context';
import { need } from '../../src/kernel/need';
import type { PluginDefinition } from '../kit';
import type { Target } from '../../src/routing/resolve';
import { countTokensAsync } from '../../src/billing/tokenizer';
import { requestText } from '../../src/protocols/request-text';
import type { RouteTranslator } from '../../src/upstream/attempt';
import { routeTranslator } from '../../src/upstream/route-translator';
import { attemptOrder } from '../../src/routing/plan';
import { closeRedis, connectRedis, redisConfigured } from '../../src/shared-state/redis';
import { LocalMintedStore, type MintedStore } from '../../src/translators/responses-to-messages/minted';
import { RedisMintedStore } from '../../src/translators/responses-to-messages/minted-redis';
import { readReferences, type ResponseReferences } from '../../src/translators/responses-to-messages/references';
import { speaksNatively } from '../../src/wire';

/** The minted-response table: in process, or shared through Redis when the gateway has one. */
async function openMinted(gateway: GatewayConfig, logger: Logger): Promise<{ store: MintedStore; close(): Promise<void> }> {
  const local = new LocalMintedStore();
  if (!redisConfigured(gateway.redis)) return { store: local, close: async () => undefined };
  const redis = await connectRedis(gateway.redis, { connectionName: 'tollgate-minted' });
  return { store: new RedisMintedStore(redis, `${gateway.redis.key_prefix}minted:`, local, logger), close: () => closeRedis(redis) };
}

/**
 * What a Responses request refers to, read once for its account when a route of its model
 * translates (a native route hands the ids to OpenAI, which resolves its own).
 */
async function referencesOf(ctx: GatewayContext, store: MintedStore, logger: Logger): Promise<ResponseReferences | undefined> {
  const { endpoint, config } = ctx.state;
  if (endpoint.id !== 'responses') return undefined;
  const request = need(ctx, 'request');
  if (attemptOrder(request.model, config).every((target) => speaksNatively(target.provider, endpoint))) return undefined;
  return readReferences(store, ctx.state.auth?.account.id ?? '', request.body, logger);
}

/** The translate plugin's slot: how the request crosses to each target of the model. */
interface TranslationState {
  for(target: Target): RouteTranslator | null;
}

declare module '../../src/kernel/context' {
  interface GatewayState {
    /** Absent when the translate plugin is disabled: only routes that speak the client's protocol serve. */
    translation?: TranslationState;
  }
}

/** Counted in slices that yield: a prompt of megabytes must not stall every other request (docs/limits.md). */
async function countLocally(ctx: GatewayContext): Promise<void> {
  const inputTokens = await countTokensAsync(requestText(need(ctx, 'request').body), () => ctx.req.socket.destroyed);
  ctx.status = 200;
  ctx.set('x-tollgate-token-count', 'estimated (o200k_base)');
  ctx.body = { input_tokens: inputTokens };
}

/** What the plugin offers the rest of the gateway: the minted-response table (WebSocket turns are kept in it too). */
export interface TranslateService {
  readonly minted: MintedStore;
}

export const translatePlugin: PluginDefinition<'translate', TranslateService> = {
  name: 'translate',
  priority: 800,
  dependsOn: ['upstream'],
  async setup(_config, kit) {
    const minted = await openMinted(kit.config, kit.logger);
    return {
      service: { minted: minted.store },
      handle: async function translatePlugin(ctx: GatewayContext, next: Next) {
        const { endpoint } = ctx.state;
        if (endpoint.id === 'count_tokens' && need(ctx, 'request').model.family === 'openai') return countLocally(ctx);
        const references = await referencesOf(ctx, minted.store, kit.logger);
        ctx.state.translation = { for: (target: Target) => routeTranslator(endpoint, target.provider, true, references) };
        await next();
      },
      close: () => minted.close(),
    };
  },
};
