/** Completes validated gateway.yaml data into the typed config: the fields derived from others. */
import { wireOf } from '../wire';
import { metricsToken } from './metrics-token';
import type { GatewayData, LongContextPriceData, ModelData, ProviderData, TierPriceData } from './schema-types';
import type { GatewayConfig, LongContextCard, ModelConfig, ModelFamily, ModelPrice, ProviderConfig, RateCard, TierCard } from './types';

/** The shape the schemas guarantee once ajv has applied their defaults (generated from them). */
export type ValidatedGatewayData = GatewayData;

/** The protocol-specific settings of a provider that sets none of them (the schema's defaults). */
export const UNSET_PROTOCOL_SETTINGS = {
  auth_header: 'authorization',
  region: '',
  access_key_id: '',
  secret_access_key: '',
  session_token: '',
  project_id: '',
  credentials_file: '',
} as const satisfies Partial<ProviderConfig>;

/** Builds the GatewayConfig from schema-valid data; call only after validation passed. */
export function deriveConfig(data: ValidatedGatewayData, source: string): GatewayConfig {
  return {
    source,
    version: data.version,
    server: { ...data.server, metrics_token: metricsToken(data) },
    console: data.console,
    store: data.store,
    redis: data.redis,
    payments: data.payments,
    budgets: data.budgets,
    alerts: data.alerts,
    telemetry: data.telemetry,
    responses: data.responses,
    providers: mapValues(data.providers, deriveProvider),
    models: mapValues(data.models, deriveModel),
    plugins: data.plugins,
  };
}

export function deriveProvider(provider: ProviderData, id: string): ProviderConfig {
  const { base_url: baseUrl, ...rest } = provider;
  return {
    id,
    ...rest,
    // A protocol may build its address from other fields; echo has none ("" keeps the type a string).
    // One trailing "/" is dropped so request paths can be appended as "/chat/completions".
    base_url: (baseUrl ?? wireOf(provider).defaultBaseUrl(rest)).replace(/\/$/, ''),
  };
}

export function deriveModel(model: ModelData, id: string): ModelConfig {
  const routes = model.routes.map((route) => ({
    provider: route.provider,
    upstream_model: route.upstream_model ?? id,
    priority: route.priority,
    weight: route.weight,
    ...(route.cost !== undefined && { cost: derivePrice(route.cost, model.family) }),
  }));
  const kind = model.kind ?? 'text';
  return {
    id,
    family: model.family,
    kind,
    image_output_tokens: kind === 'image' ? (model.image_output_tokens ?? GPT_IMAGE_OUTPUT_TOKENS) : {},
    ...(model.description !== undefined && { description: model.description }),
    routes,
    ...(model.price !== undefined && { price: derivePrice(model.price, model.family) }),
    free: model.free,
    max_output_tokens: model.max_output_tokens,
    ...(model.context_window !== undefined && { context_window: model.context_window }),
    thinking: model.thinking,
    aliases: model.aliases,
    ...(model.failover !== undefined && { failover: model.failover }),
  };
}

/**
 * Cache prices default to the input price (a provider without prompt caching bills cached tokens as
 * input). 1-hour writes are Anthropic's: twice the input price, as Anthropic bills them; an OpenAI
 * model never reports them, so its default is its ordinary cache-write price and its holds stay as
 * they were. Each tier and long-context card gets the same defaults from its own input price; a tier
 * without its own tool prices takes the standard ones.
 */
export function derivePrice(price: NonNullable<ModelData['price']>, family: ModelFamily): ModelPrice {
  const standard = deriveCard(price, family, price.tool_calls ?? {});
  return {
    ...standard,
    long_context: price.long_context === undefined ? null : deriveLongContext(price.long_context, family, standard),
    tiers: mapValues(price.tiers ?? {}, (tier) => deriveTier(tier, family, standard)),
    betas: price.betas ?? {},
    per_image: price.per_image ?? {},
  };
}

function deriveTier(tier: TierPriceData, family: ModelFamily, standard: RateCard): TierCard {
  const card = deriveCard({ ...imagePrices(standard), ...tier }, family, tier.tool_calls ?? standard.tool_calls);
  return { ...card, long_context: tier.long_context === undefined ? null : deriveLongContext(tier.long_context, family, card) };
}

function deriveLongContext(long: LongContextPriceData, family: ModelFamily, base: RateCard): LongContextCard {
  return { ...deriveCard({ ...imagePrices(base), ...long }, family, base.tool_calls), above_input_tokens: long.above_input_tokens };
}

/** A tier or long-context card bills image tokens at the card it refines: they have no rates of their own. */
function imagePrices(card: RateCard): Pick<RateCard, 'image_input' | 'image_output'> {
  return { image_input: card.image_input, image_output: card.image_output };
}

interface CardData extends Partial<Pick<TierPriceData, 'input' | 'output' | 'cache_write' | 'cache_write_1h' | 'cache_hit'>> {
  readonly image_input?: number;
  readonly image_output?: number;
}

/** An image model priced per image (or by image tokens alone) may leave the text rates out: they are then 0. */
function deriveCard(card: CardData, family: ModelFamily, tools: RateCard['tool_calls']): RateCard {
  const input = card.input ?? 0;
  const cacheWrite = card.cache_write ?? input;
  return {
    input,
    cache_write: cacheWrite,
    cache_write_1h: card.cache_write_1h ?? (family === 'anthropic' ? input * 2 : cacheWrite),
    cache_hit: card.cache_hit ?? input,
    output: card.output ?? 0,
    image_input: card.image_input ?? 0,
    image_output: card.image_output ?? 0,
    tool_calls: tools,
  };
}

/**
 * gpt-image-1's output tokens per image, as OpenAI publishes them for each size and quality: what an
 * image model's holds use unless it lists its own (`image_output_tokens`).
 */
export const GPT_IMAGE_OUTPUT_TOKENS: Readonly<Record<string, number>> = {
  '1024x1024/low': 272,
  '1024x1536/low': 408,
  '1536x1024/low': 400,
  '1024x1024/medium': 1056,
  '1024x1536/medium': 1584,
  '1536x1024/medium': 1568,
  '1024x1024/high': 4160,
  '1024x1536/high': 6240,
  '1536x1024/high': 6208,
};

function mapValues<In, Out>(record: Record<string, In>, derive: (value: In, key: string) => Out): Record<string, Out> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, derive(value, key)]));
}
