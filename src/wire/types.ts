/**
 * What it takes to speak one provider protocol, in one place: the endpoints it serves natively, how
 * its URLs and bodies are built, how a request is authenticated, how its streams are framed and how
 * it reports errors (the client headers it may see are one table of their own, `forwarded-headers.ts`).
 * `index.ts` maps every `ProviderProtocol` to one descriptor, so a protocol added to the union does
 * not compile until each of these parts exists.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProtocolSetting, ProviderConfig } from '../config/types';
import type { ParsedRequest } from '../kernel/parsed-request';
import type { SseEvent } from '../protocols/sse';
import type { EndpointId } from '../protocols/types';
import type { UpstreamClient } from '../upstream/types';

/** The body language a translator writes for an upstream: the Anthropic Messages or the OpenAI family. */
export type WireFamily = 'openai' | 'anthropic';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** Splits a response body into events; one parser per stream, fed its chunks in order. */
export interface FrameParser {
  push(chunk: Buffer): SseEvent[];
}

export interface StreamFraming {
  /** Whether a response with these headers is this protocol's event stream. */
  isStream(headers: Headers): boolean;
  /**
   * A parser of one stream; `maxEventBytes` bounds one event (server.max_reply_bytes). With
   * `rawLineBytes`, an SSE data line that long comes as its bytes, not decoded (`SseEvent.raw`).
   */
  newParser(maxEventBytes: number, rawLineBytes?: number): FrameParser;
  /**
   * True when the frames are SSE that a client of the same family reads as they come, so a native
   * relay passes the bytes through; false when each event must be re-framed as SSE (AWS event-stream).
   */
  readonly passthrough: boolean;
}

/** One upstream call, as the path builder sees it. */
export interface UpstreamCall {
  /** The endpoint whose protocol the body is written in (the client's, or the translator's target). */
  readonly endpoint: EndpointId;
  readonly upstreamModel: string;
  readonly stream: boolean;
  /** The client asked for `?beta=true` (the Anthropic SDK's beta methods and Claude Code do). */
  readonly beta: boolean;
}

/** A request ready to leave, which an authenticator may sign or add a token to. */
export interface OutgoingRequest {
  /** `https://host[:port]`, from the provider's base URL. */
  readonly origin: string;
  /** Path and query under the origin, as sent. */
  readonly path: string;
  /** Lower-case names; the authenticator adds its own. */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** Adds a provider's credentials to a request; may be async (signing, token refresh). */
export interface RequestAuthenticator {
  authenticate(request: OutgoingRequest): void | Promise<void>;
  /** The provider refused the credentials (401): forget any cached token, so the next request gets a new one. */
  refused?(): void;
}

/** A native request's parts the body builder reads. */
export interface NativeBodyInput {
  readonly request: ParsedRequest;
  readonly endpoint: EndpointId;
  readonly upstreamModel: string;
  readonly clientHeaders: IncomingHttpHeaders;
}

/** An upstream error reply in the shape its family's clients and translators read. */
export interface ErrorReply {
  readonly status: number;
  readonly body: Buffer;
}

export interface WireProtocol {
  /** How messages and the console name the protocol. */
  readonly displayName: string;
  /** The body language translated requests are written in; null for a provider that speaks every one. */
  readonly family: WireFamily | null;
  /** Client endpoints answered without translation. */
  readonly nativeEndpoints: readonly EndpointId[];
  /** `required`: the operator gives base_url; `derived`: optional, built from other fields; `none`: takes none. */
  readonly address: 'required' | 'derived' | 'none';
  /** The protocol-specific settings a provider of this protocol takes, and which of them must be set. */
  readonly settings: { readonly accepted: readonly ProtocolSetting[]; readonly required: readonly ProtocolSetting[] };
  /** The base URL when the operator gave none ('' when the protocol has none to offer). */
  defaultBaseUrl(provider: Omit<ProviderConfig, 'base_url' | 'id'>): string;
  /** Whether the provider has what it needs to be called (a key, or a credential source). */
  hasCredentials(provider: ProviderConfig): boolean;
  /** The path under the base URL, query included. */
  path(call: UpstreamCall, provider: ProviderConfig): string;
  /**
   * A native request's body: the client's bytes with the routing edits only
   * (docs/decisions.md#d2-native-requests-pass-through).
   */
  nativeBody(input: NativeBodyInput): Buffer;
  /** A translated request's body, from the translator's object. */
  translatedBody(body: Record<string, unknown>, call: UpstreamCall): Buffer;
  /**
   * Headers the protocol sets on every request, after the client's and the provider's, credentials
   * aside: `native` false for a translated request (which then needs e.g. its own `anthropic-version`).
   */
  protocolHeaders(provider: ProviderConfig, native: boolean): Record<string, string>;
  /** The client that reaches this provider, made once at boot. */
  createClient(provider: ProviderConfig): UpstreamClient;
  readonly framing: StreamFraming;
  /** Whether an event is an error report rather than the start of an answer. */
  isErrorEvent(event: SseEvent): boolean;
  /** An error reply rewritten in the family's own shape (identity for the protocols that already speak it). */
  errorReply(status: number, body: Buffer, headers: Headers): ErrorReply;
  /** A whole reply of `endpoint` in the family's own shape (identity where it already is). */
  plainReply(endpoint: EndpointId, body: Buffer): Buffer;
  /** Longest tool name the protocol accepts. */
  readonly toolNameLimit: number;
}
