/**
 * The OpenTelemetry GenAI semantic conventions' vocabulary as Tollgate uses it, in one place for the
 * spans and the gen_ai_* metrics: which operation an endpoint performs and which provider name a
 * configured provider's protocol stands for. The attribute names are the conventions' own
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
 */
import type { ProviderProtocol } from '../config/types';
import type { EndpointId } from '../protocols/types';

/** `gen_ai.operation.name`: the three generating endpoints are chat; count_tokens has no well-known value. */
export function genAiOperation(endpoint: EndpointId): string {
  return endpoint === 'count_tokens' ? 'count_tokens' : 'chat';
}

/**
 * `gen_ai.provider.name`: the conventions name the vendor, which a provider's wire protocol says
 * (`openai`, `anthropic`); the operator's own provider id goes in `tollgate.provider.id`. The
 * built-in echo provider is Tollgate's own.
 */
export function genAiProviderName(protocol: ProviderProtocol): string {
  return protocol === 'echo' ? 'tollgate.echo' : protocol;
}

/** Span and metric attribute names, spelled once. */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestStream: 'gen_ai.request.stream',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationInputTokens: 'gen_ai.usage.cache_creation.input_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  responseId: 'gen_ai.response.id',
} as const;
