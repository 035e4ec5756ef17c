/**
 * Chooses the translator for each upstream attempt. Failover targets of one model may speak
 * different protocols, so the choice is made per target, by the upstream plugin calling the
 * `translation` slot this plugin fills; the translating itself lives in `src/translators`.
 */
import { PRIORITY } from '../../src/kernel/chain';
import type { GatewayContext, Next } from '../../src/kernel/context';
import type { PluginDefinition } from '../../src/kernel/plugin';
import type { Target } from '../../src/routing/resolve';
import { speaksNatively } from '../../src/routing/resolve';
import { translatorFor } from '../../src/translators';

export const translatePlugin: PluginDefinition<'translate'> = {
  name: 'translate',
  priority: PRIORITY.translate,
  dependsOn: ['upstream'],
  setup() {
    return {
      async handle(ctx: GatewayContext, next: Next) {
        const { endpoint } = ctx.state;
        ctx.state.translation = {
          // null: the target speaks the client's protocol, and the bytes go through untouched.
          for: (target: Target) => (speaksNatively(target.provider, endpoint) ? null : translatorFor(endpoint, target.provider.protocol as 'openai' | 'anthropic')),
        };
        await next();
      },
    };
  },
};
