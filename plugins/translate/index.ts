/**
 * Chooses the translator for each upstream attempt. Failover targets of one model may speak
 * different protocols, so the choice is made per target, by the upstream plugin calling the
 * `translation` slot this plugin fills; the translating itself lives in `src/translators`.
 *
 * One request is answered here instead: token counting (`/v1/messages/count_tokens`, which Claude
 * Code calls) for an OpenAI-family model, which has no such endpoint upstream. The prompt is counted
 * with the o200k_base tokenizer, the encoding of OpenAI's current models.
 */
import type { GatewayContext, Next } from '../../src/kernel/context';
import { need } from '../../src/kernel/need';
import type { PluginDefinition } from '../kit';
import type { Target } from '../../src/routing/resolve';
import { speaksNatively } from '../../src/routing/resolve';
import { countTokensAsync } from '../../src/billing/tokenizer';
import { requestText } from '../../src/protocols/request-text';
import { translatorFor } from '../../src/translators';
import { wireOf } from '../../src/wire';

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
        ctx.state.translation = {
          // null: the target speaks the client's protocol, and the bytes go through untouched.
          for: (target: Target) => (speaksNatively(target.provider, endpoint) ? null : translatorFor(endpoint, wireOf(target.provider).family)),
        };
        await next();
      },
    };
  },
};
