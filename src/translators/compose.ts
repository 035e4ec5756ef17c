/**
 * Builds a Translator from its three parts: the request mapper of the pair, a reader for the
 * upstream's protocol and a writer for the client's. Each pair's index.ts says which three.
 */
import type { GatewayError } from '../kernel/errors';
import type { SseEvent } from '../protocols/sse';
import type { AssistantTurn, TurnStreamWriter } from '../protocols/turn';
import type { EndpointId, Usage } from '../protocols/types';
import type { ReplyStreamReader } from './readers/types';
import type { WireFamily } from '../wire/types';
import type { StreamTranslation, TranslationContext, Translator, TranslatorPair } from './types';

export interface TranslatorParts {
  readonly pair: TranslatorPair;
  readonly target: WireFamily;
  readonly upstreamEndpoint: EndpointId;
  readonly request: (ctx: TranslationContext) => Record<string, unknown>;
  /** Reads a whole upstream reply; `hasUsage` says whether the upstream reported usage at all. */
  readonly readReply: (upstream: unknown, ctx: TranslationContext) => { turn: AssistantTurn; hasUsage: boolean };
  readonly writeReply: (turn: AssistantTurn, ctx: TranslationContext) => object;
  readonly newReader: (ctx: TranslationContext) => ReplyStreamReader;
  readonly newWriter: (ctx: TranslationContext) => TurnStreamWriter;
  readonly error: Translator['error'];
}

/** One upstream stream read through `reader` and written by `writer`. */
class ComposedStream implements StreamTranslation {
  private interrupted = false;

  constructor(
    private readonly reader: ReplyStreamReader,
    private readonly writer: TurnStreamWriter,
  ) {}

  get ended(): boolean {
    return this.interrupted || this.reader.ended;
  }

  get upstreamError(): GatewayError | null {
    return this.reader.upstreamError;
  }

  event(event: SseEvent): string {
    return this.ended ? '' : this.reader.read(event, this.writer);
  }

  interrupt(error: GatewayError): string {
    if (this.ended) return '';
    this.interrupted = true;
    return this.writer.fail(error);
  }

  usage(): Usage | null {
    return this.reader.usage();
  }
}

export function composeTranslator(parts: TranslatorParts): Translator {
  return {
    pair: parts.pair,
    target: parts.target,
    upstreamEndpoint: parts.upstreamEndpoint,
    request: parts.request,
    reply(upstream, ctx) {
      const { turn, hasUsage } = parts.readReply(upstream, ctx);
      return { body: parts.writeReply(turn, ctx), usage: hasUsage ? turn.usage : null };
    },
    stream: (ctx) => new ComposedStream(parts.newReader(ctx), parts.newWriter(ctx)),
    error: parts.error,
  };
}
