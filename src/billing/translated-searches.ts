/**
 * The searches held for a hosted web search that a translated route runs as Claude's web search tool.
 * The request's reach counts searches as OpenAI bills them (chat: one per request; Responses: its
 * `max_tool_calls`, else the billing default); on Claude each search is billed, up to the `max_uses`
 * the translator sends, and its results are input of unknown size. So when a route of the model
 * translates, the hold covers exactly what that route may run, or the dearer of both when the model
 * also has native routes.
 */
import type { GatewayConfig, ModelConfig } from '../config/types';
import type { Json } from '../json';
import type { RequestReach } from '../protocols/request-reach';
import type { Endpoint } from '../protocols/types';
import { attemptOrder } from '../routing/plan';
import { speaksNatively } from '../wire';

export function withTranslatedSearches(reach: RequestReach, endpoint: Endpoint, body: Readonly<Json>, model: ModelConfig, config: GatewayConfig): RequestReach {
  const held = reach.toolCalls.web_search;
  if (held === undefined || !config.plugins.translate.enabled) return reach;
  const targets = attemptOrder(model, config);
  const translated = targets.filter((target) => !speaksNatively(target.provider, endpoint)).length;
  if (translated === 0) return reach;
  const uses = translatedUses(endpoint, body, config.plugins.translate.web_search_max_uses);
  const native = translated < targets.length;
  const searches = native ? Math.max(held ?? config.plugins.billing.server_tool_uses, uses) : uses;
  return { ...reach, unsizedInput: true, toolCalls: { ...reach.toolCalls, web_search: searches } };
}

/** What the translator sends as max_uses: a Responses request's own `max_tool_calls`, else the setting. */
function translatedUses(endpoint: Endpoint, body: Readonly<Json>, configured: number): number {
  const cap = body.max_tool_calls;
  if (endpoint.id === 'responses' && typeof cap === 'number' && Number.isInteger(cap) && cap >= 0) return cap;
  return configured;
}
