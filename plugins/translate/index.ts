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
import type { GatewayContext, Next } from '../../src/kernel/context';
import { need } from '../../src/kernel/need';
import type { PluginDefinition } from '../kit';
import type { Target } from '../../src/routing/resolve';
import { countTokensAsync } from '../../src/billing/tokenizer';
import { requestText } from '../../src/protocols/request-text';
import type { RouteTranslator } from '../../src/upstream/attempt';
import { routeTranslator } from '../../src/upstream/route-translator';

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

export const translatePlugin: PluginDefinition<'translate'> = {
  name: 'translate',
  priority: 800,
  dependsOn: ['upstream'],
  setup() {
    return {
      service: undefined,
      handle: async function translatePlugin(ctx: GatewayContext, next: Next) {
        const { endpoint } = ctx.state;
        if (endpoint.id === 'count_tokens' && need(ctx, 'request').model.family === 'openai') return countLocally(ctx);
        ctx.state.translation = { for: (target: Target) => routeTranslator(endpoint, target.provider, true) };
        await next();
      },
    };
  },
};
