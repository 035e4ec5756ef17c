/**
 * The TranslationContext a request-mapper unit test hands its translator: a free model and a provider
 * of the upstream protocol, with fixed upstream model names and the tool-name limit of that protocol.
 */
import { UNSET_PROTOCOL_SETTINGS } from '../../src/config/derive';
import type { ModelConfig, ProviderConfig } from '../../src/config/types';
import { ToolNameMap } from '../../src/translators/tool-names';
import type { TranslationContext } from '../../src/translators/types';

/** The upstream protocol the translator under test writes to. */
export type UpstreamProtocol = 'anthropic' | 'openai';

/**
 * A context for `clientBody` bound for an `upstream` provider; `model` overrides fields of the
 * client-facing model (`claude-test` or `gpt-test`).
 */
export function translationContext(upstream: UpstreamProtocol, clientBody: Record<string, unknown>, model: Partial<ModelConfig> = {}): TranslationContext {
  const anthropic = upstream === 'anthropic';
  const provider: ProviderConfig = {
    id: upstream,
    protocol: upstream,
    base_url: 'http://x',
    api_key: 'k',
    ...UNSET_PROTOCOL_SETTINGS,
    headers: {},
    anthropic_version: '2023-06-01',
    timeouts: { connect_ms: 1000, first_byte_ms: 1000, idle_ms: 1000 },
    max_connections: 8,
  };
  return {
    model: { id: anthropic ? 'claude-test' : 'gpt-test', family: upstream, routes: [], free: true, max_output_tokens: 4096, thinking: 'adaptive', ...model, kind: 'text', image_output_tokens: {} },
    upstreamModel: anthropic ? 'claude-upstream' : 'gpt-upstream',
    provider,
    toolNames: new ToolNameMap(anthropic ? 128 : 64),
    clientBody,
    webSearchMaxUses: 5,
  };
}
