/** Completes validated gateway.yaml data into the typed config: the fields derived from others. */
import { wireOf } from '../wire';
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
  readonly auth_header: ProviderConfig['auth_header'];
  readonly region: string;
  readonly access_key_id: string;
  readonly secret_access_key: string;
  readonly session_token: string;
  readonly project_id: string;
  readonly credentials_file: string;
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
    server: data.server,
    console: data.console,
    store: data.store,
    redis: data.redis,
    providers: mapValues(data.providers, deriveProvider),
    models: mapValues(data.models, deriveModel),
    plugins: data.plugins,
  };
}

function deriveProvider(provider: ValidatedProvider, id: string): ProviderConfig {
  const { base_url: baseUrl, ...rest } = provider;
  return {
    id,
    ...rest,
    // A protocol may build its address from other fields; echo has none ("" keeps the type a string).
    // One trailing "/" is dropped so request paths can be appended as "/chat/completions".
    base_url: (baseUrl ?? wireOf(provider).defaultBaseUrl(rest)).replace(/\/$/, ''),
  };
}

function deriveModel(model: ValidatedModel, id: string): ModelConfig {
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
