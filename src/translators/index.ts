/**
 * Which translator serves a client endpoint on a provider of another protocol. The switch is
 * explicit: every pair Tollgate serves is listed, and any other combination is a coded error that
 * names both sides, never a guess.
 */
import type { ModelConfig } from '../config/types';
import { GatewayError } from '../kernel/errors';
import type { Endpoint } from '../protocols/types';
import type { Target } from '../routing/resolve';
import { wireOf, type WireFamily } from '../wire';
import { chatToMessages } from './chat-to-messages';
import { messagesToChat } from './messages-to-chat';
import { responsesToMessages } from './responses-to-messages';
import type { ResponseReferences } from './responses-to-messages/references';
import { ToolNameMap } from './tool-names';
import type { TranslationContext, Translator } from './types';

/**
 * The translator from `endpoint` to an upstream of the `family` body language (every provider protocol
 * of that family: Anthropic, Bedrock and Vertex all read Messages bodies). Null: a provider that speaks
 * every protocol, which never needs one.
 */
export function translatorFor(endpoint: Endpoint, family: WireFamily | null): Translator {
  switch (`${endpoint.id}>${family}`) {
    case 'chat>anthropic':
      return chatToMessages;
    case 'responses>anthropic':
      return responsesToMessages;
    case 'messages>openai':
      return messagesToChat;
    default:
      throw new GatewayError(
        'TOLLGATE_ERR_UNSUPPORTED_TRANSLATION',
        endpoint.id === 'count_tokens'
          ? 'Token counting is only available for models served over the Anthropic Messages protocol.'
          : `Requests to ${endpoint.path} cannot be translated for a provider speaking the ${family ?? 'echo'} protocol.`,
        { param: 'model' },
      );
  }
}

/** A fresh context for one attempt at `target`: tool names are mapped per attempt, per upstream. */
export function translationContext(
  model: ModelConfig,
  target: Target,
  clientBody: Readonly<Record<string, unknown>>,
  webSearchMaxUses: number,
  references?: ResponseReferences,
): TranslationContext {
  return {
    references,
    webSearchMaxUses,
    model,
    upstreamModel: target.route.upstream_model,
    provider: target.provider,
    toolNames: new ToolNameMap(wireOf(target.provider).toolNameLimit),
    clientBody,
  };
}

export type { Translator, TranslationContext } from './types';
