/**
 * A protocol-neutral assistant turn, the common language of the three response writers: the echo
 * provider and the translators describe what the model produced once, and each writer renders it in
 * its client's protocol.
 */
import type { GatewayError } from '../kernel/errors';
import type { Usage } from './types';

/** Why the assistant stopped, in neutral words each writer maps to its protocol's vocabulary. */
export type TurnStop = 'end' | 'stop_sequence' | 'max_tokens' | 'tool_use' | 'refusal';

/**
 * A reasoning block. Anthropic signs its thinking; the signature (or the opaque data of a redacted
 * block) is what a later turn must send back verbatim, so every writer keeps it somewhere the client
 * can return it.
 */
export type ThinkingPart =
  | { readonly type: 'thinking'; readonly text: string; readonly signature: string }
  | { readonly type: 'redacted_thinking'; readonly data: string };

/** A web page a search found, or that a passage of the answer cites. */
export interface WebSource {
  readonly url: string;
  readonly title: string | null;
}

/**
 * A search the provider ran on its own side (Anthropic's web search server tool) while it answered:
 * what it searched for and the pages it found, or the error code it got instead of pages.
 */
export interface WebSearchPart {
  readonly type: 'web_search';
  /** The provider's id of the search. */
  readonly id: string;
  readonly query: string;
  readonly sources: readonly WebSource[];
  readonly error: string | null;
}

/** One piece of an assistant turn, in the order it was produced. */
export type TurnPart =
  /** `citations`: the pages the whole of this text is drawn from (none when it cites nothing). */
  | { readonly type: 'text'; readonly text: string; readonly citations?: readonly WebSource[] }
  /** `arguments` is JSON text; '' means the tool was called without arguments. */
  | { readonly type: 'tool_call'; readonly id: string; readonly name: string; readonly arguments: string }
  | ThinkingPart
  | WebSearchPart;

/** A finished assistant turn, protocol-neutral: what a writer needs to build a non-streamed reply. */
export interface AssistantTurn {
  /** The client-facing id; each writer mints one with its own prefix when absent. */
  readonly id?: string;
  readonly model: string;
  /** Unix seconds; now when absent. */
  readonly created?: number;
  readonly parts: readonly TurnPart[];
  readonly stop: TurnStop;
  /** The stop string that matched, when `stop` is `stop_sequence` (Messages reports it). */
  readonly stopSequence?: string | null;
  readonly usage: Usage;
}

/**
 * The event-by-event side of a writer. Every method returns the SSE text to send (possibly several
 * frames, possibly '') so a translator can call them as upstream events arrive.
 */
export interface TurnStreamWriter {
  /** The opening frames; `usage` is the input side, known up front only to some upstreams. */
  start(usage?: Usage): string;
  /** A text fragment; '' yields nothing. */
  text(delta: string): string;
  /** Opens a tool call (closing whatever was open). */
  toolCallStart(id: string, name: string): string;
  /** A fragment of the open tool call's JSON arguments. */
  toolCallArguments(fragment: string): string;
  /** Closes the open tool call; one that got no arguments is given `{}` (docs/protocols.md#fact-9). */
  toolCallEnd(): string;
  /** A fragment of reasoning text, opening a reasoning block when none is open. */
  thinking(delta: string): string;
  /** The signature of the open reasoning block (Anthropic sends it once, just before the block ends). */
  thinkingSignature(signature: string): string;
  /** A whole redacted reasoning block: opaque data the client must send back unchanged. */
  redactedThinking(data: string): string;
  /** A provider-side search for `query` has begun (closing whatever was open). */
  webSearchStart(id: string, query: string): string;
  /** The outcome of search `id`: the pages it found, or the error code it ended with. */
  webSearchEnd(id: string, sources: readonly WebSource[], error: string | null): string;
  /**
   * The text written last, the last `citedLength` code points (the whole of an upstream text block,
   * already passed to `text`), is drawn from `sources`. A length, not the text: a stream keeps none
   * of the text it relayed to place it.
   */
  citations(citedLength: number, sources: readonly WebSource[]): string;
  /** Closes whatever block is open (text, reasoning or tool call); '' when none is. */
  blockEnd(): string;
  /** Everything that ends the stream: stop reason, final usage and the protocol's terminator. */
  finish(stop: TurnStop, usage: Usage, stopSequence?: string | null): string;
  /**
   * Ends a stream already under way with the protocol's error event and no success terminator (no
   * `[DONE]`, no `message_stop`): the client must not mistake a broken answer for a whole one.
   */
  fail(error: GatewayError): string;
}
