/**
 * The innermost plugin: sends the request to the model's provider and relays the answer. Protocol
 * work lives in `src/upstream` and `src/protocols`; this file only picks the target and reports.
 */
import type { GatewayContext } from '../../src/kernel/context';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginDefinition } from '../../src/kernel/plugin';
import { speaksNatively, targetsFor } from '../../src/routing/resolve';
import { createUpstreamClients, isConfigured } from '../../src/upstream/clients';
import { forwardNative } from '../../src/upstream/forward';
import { PRIORITY } from '../../src/kernel/chain';

const PROTOCOL_NAMES = { openai: 'OpenAI', anthropic: 'Anthropic Messages', echo: 'echo' } as const;

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
        if (!speaksNatively(target.provider, endpoint)) {
          throw new GatewayError(
            'TOLLGATE_ERR_UNSUPPORTED_PROTOCOL',
            `The model '${model.id}' is served over the ${PROTOCOL_NAMES[target.provider.protocol]} protocol and is not available on ${endpoint.path}.`,
            { param: 'model' },
          );
        }
        const client = clients.get(target.provider.id)!;
        if (!isConfigured(client)) {
          throw new GatewayError(
            'TOLLGATE_ERR_PROVIDER_UNCONFIGURED',
            `The model '${model.id}' is unavailable: its provider '${target.provider.id}' has no API key configured on this gateway.`,
          );
        }
        await forwardNative(ctx, target, client);
      },
      async close() {
        await Promise.all([...clients.values()].map((client) => client.close()));
      },
    };
  },
};
