/**
 * The validated, frozen shape of gateway.yaml. The schemas (`schemas/gateway.schema.json` and each
 * plugin's `plugins/<name>/schema.json`) are the one source of truth: their types are generated into
 * `schema-types.ts` (`npm run schema:types`), and this file only names parts of them and adds what the
 * loader derives (a provider's id and base URL, a model's filled-in routes and prices).
 */
import type {
  BillingPluginConfig,
  GatewayData,
  ModelData,
  ProviderData,
  RateLimitPluginConfig,
  RouteData,
  UpstreamFailover,
  UpstreamPluginConfig,
} from './schema-types';
import type { ModelKind } from '../protocols/types';

export type { BillingPluginConfig, RateLimitPluginConfig, UpstreamPluginConfig };

/**
 * The wire protocol a provider speaks. `bedrock` and `vertex` carry Anthropic Messages bodies on AWS
 * and Google Cloud; `echo` is the built-in demo provider, which speaks all of them. Each has its
 * descriptor in `src/wire`.
 */
export type ProviderProtocol = ProviderData['protocol'];

/** Provider settings that belong to some protocols only (cross-checked against the descriptor). */
export type ProtocolSetting = 'api_key' | 'auth_header' | 'region' | 'access_key_id' | 'secret_access_key' | 'session_token' | 'project_id' | 'credentials_file';

/**
 * The protocol family a model natively belongs to (declared, never guessed:
 * docs/decisions.md#d1-a-models-family-is-declared).
 */
export type ModelFamily = ModelData['family'];

/** A provider as the loader completes it: keyed by its id, its base URL always set. */
export interface ProviderConfig extends Omit<ProviderData, 'base_url'> {
  readonly id: string;
  /** Origin plus path prefix; for `openai` it includes the version path (`https://api.openai.com/v1`). */
  readonly base_url: string;
}

export interface RouteTarget extends Omit<RouteData, 'cost'> {
  /** The id sent upstream; the public model id when absent from gateway.yaml. */
  readonly upstream_model: string;
  /** What the provider bills the operator, as gateway.yaml states it, filled in as prices are; absent: the catalog's (`route-cost.ts`). */
  readonly cost?: ModelPrice;
}

/** One set of rates per 1 million tokens (tool calls per 1,000), in currency units of the balance, cache prices filled in. */
export interface RateCard {
  readonly input: number;
  readonly cache_write: number;
  readonly cache_write_1h: number;
  readonly cache_hit: number;
  readonly output: number;
  /** Image tokens (an image model's, or the Responses `image_generation` tool's): never at the text prices. */
  readonly image_input: number;
  readonly image_output: number;
  readonly tool_calls: Readonly<Record<string, number>>;
}

/** Rates for every token of a request whose input is above `above_input_tokens`. */
export interface LongContextCard extends RateCard {
  readonly above_input_tokens: number;
}

/** The rates of one service level: its own, and its long-context rates when it has them. */
export interface TierCard extends RateCard {
  readonly long_context: LongContextCard | null;
}

/**
 * A model's prices as the loader completes them: the standard rates (with their long-context rates),
 * the service tiers it is offered at, and the anthropic-beta names this model prices apart.
 */
export interface ModelPrice extends TierCard {
  readonly tiers: Readonly<Record<string, TierCard>>;
  readonly betas: Readonly<Record<string, string>>;
  /** An image model priced per image: the price of one image by `size/quality`, in listed order; empty otherwise. */
  readonly per_image: Readonly<Record<string, number>>;
}

export interface ModelConfig extends Omit<ModelData, 'routes' | 'price' | 'aliases' | 'image_output_tokens'> {
  readonly id: string;
  /** Always set by the loader: `text` unless gateway.yaml says `image`. */
  readonly kind: ModelKind;
  /** An image model's output tokens per image by `size/quality` (the shipped table unless set); empty for a text model. */
  readonly image_output_tokens: Readonly<Record<string, number>>;
  readonly routes: readonly RouteTarget[];
  /** Absent only when `free` is true (a cross-field rule of the loader). */
  readonly price?: ModelPrice;
  /** Other names clients may send for this model; `*` matches any run of characters. Always set by the loader. */
  readonly aliases?: readonly string[];
}

export type ServerConfig = GatewayData['server'];
/** OpenTelemetry traces (src/telemetry); each field may also come from the standard OTEL_* variables. */
type TelemetryConfig = GatewayData['telemetry'];
export type TracesConfig = TelemetryConfig['traces'];
export type StoreConfig = GatewayData['store'];
export type RedisConfig = GatewayData['redis'];
/** Card payments through Stripe Checkout (src/payments); absent when card payments are off. */
export type StripeConfig = NonNullable<GatewayData['payments']['stripe']>;

export type FailoverPolicy = UpstreamFailover;
/** An outcome of an attempt worth retrying: a transport failure or an upstream status. */
export type RetryableOutcome = FailoverPolicy['retry_on'][number];
export type BreakerConfig = UpstreamPluginConfig['breaker'];
/** Session affinity within a priority level (src/routing/affinity.ts). */
export type AffinityConfig = UpstreamPluginConfig['affinity'];

/** Limits per minute window; 0 means unlimited. */
export type RateLimits = RateLimitPluginConfig['per_key'];

/** Every plugin's section, by plugin name: the plugins gateway.yaml's schema lists. */
export type PluginConfigs = GatewayData['plugins'];

export type PluginName = keyof PluginConfigs;

/** A limit a model's entry left out and the catalog supplied (`catalog-limits.ts`). */
export interface CatalogLimit {
  readonly model: string;
  readonly field: 'context_window' | 'max_output_tokens';
  readonly value: number;
  /** Which catalog, at which version and date, and its name for the model. */
  readonly source: string;
}

export interface GatewayConfig extends Omit<GatewayData, 'providers' | 'models'> {
  /** The file this config was read from, for messages. */
  readonly source: string;
  /** The limits taken from the catalog; absent when the file states every limit. */
  readonly catalog_limits?: readonly CatalogLimit[];
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly models: Readonly<Record<string, ModelConfig>>;
}
