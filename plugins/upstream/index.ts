/**
 * The innermost plugin: sends the request to the model's provider and relays the answer. Protocol
 * work lives in `src/upstream` and `src/protocols`; this file only picks the target and reports.
 */
import type { GatewayContext } from '../../src/kernel/context';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginDefinition } from '../../src/kernel/plugin';
import { speaksNatively, targetsFor, type Target } from '../../src/routing/resolve';
import type { Translator } from '../../src/translators/types';
import { createUpstreamClients, isConfigured } from '../../src/upstream/clients';
import { forwardNative } from '../../src/upstream/forward';
import { forwardTranslated } from '../../src/upstream/forward-translated';
import { PRIORITY } from '../../src/kernel/chain';

const PROTOCOL_NAMES = { openai: 'OpenAI', anthropic: 'Anthropic Messages', echo: 'echo' } as const;

/** The translator for a target of another protocol; without the translate plugin there is none. */
function translatorOf(ctx: GatewayContext, target: Target, modelId: string): Translator {
  const translator = ctx.state.translation?.for(target) ?? null;
  if (translator === null) {
    throw new GatewayError(
      'TOLLGATE_ERR_UNSUPPORTED_PROTOCOL',
      `The model '${modelId}' is served over the ${PROTOCOL_NAMES[target.provider.protocol]} protocol and is not available on ${ctx.state.endpoint.path}.`,
      { param: 'model' },
    );
  }
  return translator;
}

export const upstreamPlugin: PluginDefinition<'upstream'> = {
  name: 'upstream',
  priority: PRIORITY.upstream,
  setup(_config, kit) {
    const clients = createUpstreamClients(kit.config);
    for (const client of clients.values()) {
      if (!isConfigured(client)) {
        kit.logger.warn(
          { provider: client.provider.id },
          `provider "${client.provider.id}" has no api_key: its models answer 503 until one is set`,
        );
      }
    }

    return {
      async handle(ctx: GatewayContext) {
        const { endpoint } = ctx.state;
        const model = ctx.state.request!.model;
        const [target] = targetsFor(model, ctx.state.config);
        const translator = speaksNatively(target.provider, endpoint) ? null : translatorOf(ctx, target, model.id);
        const client = clients.get(target.provider.id)!;
        if (!isConfigured(client)) {
          throw new GatewayError(
            'TOLLGATE_ERR_PROVIDER_UNCONFIGURED',
            `The model '${model.id}' is unavailable: its provider '${target.provider.id}' has no API key configured on this gateway.`,
          );
        }
        if (translator === null) await forwardNative(ctx, target, client);
        else await forwardTranslated(ctx, target, client, translator);
      },
      async close() {
        await Promise.all([...clients.values()].map((client) => client.close()));
      },
    };
  },
};
