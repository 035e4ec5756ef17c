/** What anyone may read: whether sign-up is open, and the price list from gateway.yaml. */
import type Router from '@koa/router';
import { formatUnits, unitsToNano } from '../../billing/money';
import type { ModelConfig } from '../../config/types';
import type { AdminDeps, ApiState } from '../context';

/** A price as written in gateway.yaml, as an exact decimal string. */
const decimal = (value: number): string => formatUnits(unitsToNano(value));

function priceView(model: ModelConfig) {
  return {
    model: model.id,
    family: model.family,
    kind: model.kind,
    free: model.free,
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
    ctx.body = { signup: deps.runtime.current.config.console.signup, version: deps.version };
  });

  router.get('/prices', (ctx) => {
    ctx.body = { models: Object.values(deps.runtime.current.config.models).map(priceView) };
  });
}
