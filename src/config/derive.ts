/** Completes validated gateway.yaml data into the typed config: the fields derived from others. */
import type {
  FailoverPolicy,
  GatewayConfig,
  ModelConfig,
  ModelFamily,
  ModelPrice,
  PluginConfigs,
  ProviderConfig,
  ProviderProtocol,
  ProviderTimeouts,
  ServerConfig,
  ConsoleConfig,
  RedisConfig,
  StoreConfig,
  ThinkingStyle,
} from './types';

/** A provider as the schema leaves it: defaults applied, `id` not yet set, `base_url` optional. */
interface ValidatedProvider {
  readonly protocol: ProviderProtocol;
  readonly base_url?: string;
  readonly api_key: string;
  readonly headers: Record<string, string>;
  readonly anthropic_version: string;
  readonly timeouts: ProviderTimeouts;
  readonly max_connections: number;
}

interface ValidatedRoute {
  readonly provider: string;
  readonly upstream_model?: string;
  readonly priority: number;
  readonly weight: number;
}

interface ValidatedModel {
  readonly family: ModelFamily;
  readonly description?: string;
  readonly routes: ValidatedRoute[];
  readonly price?: { input: number; output: number; cache_write?: number; cache_hit?: number };
  readonly free: boolean;
  readonly max_output_tokens: number;
  readonly thinking: ThinkingStyle;
  readonly failover?: Partial<FailoverPolicy>;
}

/** The shape `schemas/gateway.schema.json` guarantees once ajv has applied its defaults. */
export interface ValidatedGatewayData {
  readonly version: number;
  readonly server: ServerConfig;
  readonly console: ConsoleConfig;
  readonly store: StoreConfig;
  readonly redis: RedisConfig;
  readonly providers: Record<string, ValidatedProvider>;
  readonly models: Record<string, ValidatedModel>;
  readonly plugins: PluginConfigs;
}

/** Builds the GatewayConfig from schema-valid data; call only after validation passed. */
export function deriveConfig(data: ValidatedGatewayData, source: string): GatewayConfig {
  return {
    source,
    version: data.version,
    server: data.server,
    console: data.console,
    store: data.store,
    redis: data.redis,
    providers: mapValues(data.providers, deriveProvider),
    models: mapValues(data.models, deriveModel),
    plugins: data.plugins,
  };
}

export function deriveProvider(provider: ValidatedProvider, id: string): ProviderConfig {
  return {
    id,
    protocol: provider.protocol,
    // echo has no address; "" keeps the type a plain string for every other protocol.
    // One trailing "/" is dropped so request paths can be appended as "/chat/completions".
    base_url: (provider.base_url ?? '').replace(/\/$/, ''),
    api_key: provider.api_key,
    headers: provider.headers,
    anthropic_version: provider.anthropic_version,
    timeouts: provider.timeouts,
    max_connections: provider.max_connections,
  };
}

export function deriveModel(model: ValidatedModel, id: string): ModelConfig {
  const routes = model.routes.map((route) => ({
    provider: route.provider,
    upstream_model: route.upstream_model ?? id,
    priority: route.priority,
    weight: route.weight,
  }));
  return {
    id,
    family: model.family,
    ...(model.description !== undefined && { description: model.description }),
    routes,
    ...(model.price !== undefined && { price: derivePrice(model.price) }),
    free: model.free,
    max_output_tokens: model.max_output_tokens,
    thinking: model.thinking,
    ...(model.failover !== undefined && { failover: model.failover }),
  };
}

/** Cache prices default to the input price: a provider without prompt caching bills cached tokens as input. */
function derivePrice(price: NonNullable<ValidatedModel['price']>): ModelPrice {
  return {
    input: price.input,
    cache_write: price.cache_write ?? price.input,
    cache_hit: price.cache_hit ?? price.input,
    output: price.output,
  };
}

function mapValues<In, Out>(record: Record<string, In>, derive: (value: In, key: string) => Out): Record<string, Out> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, derive(value, key)]));
}
