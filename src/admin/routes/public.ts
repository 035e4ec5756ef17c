/**
 * What anyone may read: whether sign-up is open, the currency balances are kept in, and the price
 * list from gateway.yaml, each model marked available or not (a model none of whose providers has
 * credentials cannot answer: the console does not offer it).
 */
import type Router from '@koa/router';
import { formatUnits, unitsToNano } from '../../billing/money';
import type { GatewayConfig, ModelConfig } from '../../config/types';
import { balanceCurrency } from '../../money/currency';
import { unservableProvider } from '../../routing/resolve';
import type { AdminDeps, ApiState } from '../context';

/** A price as written in gateway.yaml, as an exact decimal string. */
const decimal = (value: number): string => formatUnits(unitsToNano(value));

function priceView(model: ModelConfig, config: GatewayConfig) {
  return {
    model: model.id,
    family: model.family,
    kind: model.kind,
    free: model.free,
    available: unservableProvider(model, config) === null,
    price:
      model.price === undefined || model.free
        ? null
        : {
            input: decimal(model.price.input),
            cache_write: decimal(model.price.cache_write),
            cache_hit: decimal(model.price.cache_hit),
            output: decimal(model.price.output),
            image_input: decimal(model.price.image_input),
            image_output: decimal(model.price.image_output),
            per_image: Object.fromEntries(Object.entries(model.price.per_image).map(([key, units]) => [key, decimal(units)])),
          },
    max_output_tokens: model.max_output_tokens,
    description: model.description ?? null,
  };
}

export function publicRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/meta', (ctx) => {
    const { config } = deps.runtime.current;
    ctx.body = { signup: config.console.signup, version: deps.version, currency: balanceCurrency(config) };
  });

  router.get('/prices', (ctx) => {
    const { config } = deps.runtime.current;
    ctx.body = { models: Object.values(config.models).map((model) => priceView(model, config)) };
  });
}
