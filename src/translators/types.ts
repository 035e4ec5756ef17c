/**
 * The contract every protocol pair fulfils. A translator is a request mapper plus a reader for the
 * upstream's protocol and a writer for the client's: replies go upstream → neutral turn → client, so
 * three readers and three writers serve every pair instead of one bespoke converter per direction.
 */
import type { ModelConfig, ProviderConfig } from '../config/types';
import type { GatewayError } from '../kernel/errors';
import type { SseEvent } from '../protocols/sse';
import type { EndpointId, Usage } from '../protocols/types';
import type { WireFamily } from '../wire/types';
import type { ResponseReferences } from './responses-to-messages/references';
import type { ToolNameMap } from './tool-names';

/** The pairs Tollgate translates, named client side first. */
export type TranslatorPair = 'chat-to-messages' | 'responses-to-messages' | 'messages-to-chat';

/** What a translator knows about one upstream attempt. */
export interface TranslationContext {
  /** The model as the client named it; replies carry this id, never the upstream's. */
  readonly model: ModelConfig;
  /** The id sent upstream for this attempt's target. */
  readonly upstreamModel: string;
  readonly provider: ProviderConfig;
  /** Tool names as sent upstream ↔ as the client wrote them; filled by `request`, read by replies. */
  readonly toolNames: ToolNameMap;
  /** The client's parsed request body. */
  readonly clientBody: Readonly<Record<string, unknown>>;
  /** Searches a hosted web search may run when the request does not cap them (plugins.translate.web_search_max_uses). */
  readonly webSearchMaxUses: number;
  /** Responses only: the minted responses the request refers to, read for its account; none when absent. */
  readonly references?: ResponseReferences;
}

/** One streamed exchange: upstream SSE events in, client SSE frames out, one call per event. */
export interface StreamTranslation {
  /** The client frames for one upstream event ('' when it maps to nothing, e.g. a ping). */
  event(event: SseEvent): string;
  /** True once the upstream's terminal event (or an in-stream error) has been handled. */
  readonly ended: boolean;
  /** The in-stream error the upstream reported, if any; the stream has then been failed. */
  readonly upstreamError: GatewayError | null;
  /** Frames that end the client's stream when the upstream broke off before its terminal event. */
  interrupt(error: GatewayError): string;
  /** Usage seen so far (cumulative); null while the upstream has reported none. */
  usage(): Usage | null;
}

export interface Translator {
  readonly pair: TranslatorPair;
  /** The upstream protocol family the translated request is written in (any provider protocol of it serves). */
  readonly target: WireFamily;
  /** The endpoint of that family the request goes to (the provider's protocol builds its path). */
  readonly upstreamEndpoint: EndpointId;
  /**
   * The upstream request body. Throws a 400 GatewayError naming the field when the request asks for
   * something the upstream protocol cannot express: never a silent drop that changes the meaning.
   */
  request(ctx: TranslationContext): Record<string, unknown>;
  /** A whole upstream reply as the client's reply object, with the usage it reported. */
  reply(upstream: unknown, ctx: TranslationContext): { readonly body: object; readonly usage: Usage | null };
  /** The state machine for one streamed reply. */
  stream(ctx: TranslationContext): StreamTranslation;
  /**
   * An upstream error reply (status ≥ 400, other than 401/403) as the error the client sees: status, types
   * and code in the client's vocabulary (docs/protocols.md#error-translation), the upstream's message kept.
   */
  error(status: number, body: Buffer, headers: Readonly<Record<string, string | string[] | undefined>>): GatewayError;
}
