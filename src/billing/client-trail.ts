/**
 * What a charge records about the client beside its usage: its session (the coding agents send one on
 * every request), its User-Agent, and whether the console's playground sent it. Read from headers
 * already parsed, so capturing them costs a few map lookups per request and no store round trip.
 */
import type { ChargeOrigin } from '../store/store';

/**
 * The session headers, most explicit first: Tollgate's own (any client may set it), Claude Code's
 * (sent on every request since 2.1.86) and Codex's (`session_id`, beside its `conversation_id`).
 */
const SESSION_HEADERS = ['x-tollgate-session', 'x-claude-code-session-id', 'session_id'] as const;

/** The console's playground marks its requests with this header; it only labels the caller's own usage. */
const ORIGIN_HEADER = 'x-tollgate-origin';

const SESSION_ID = /^[\x21-\x7e]{1,128}$/;
const USER_AGENT_MAX = 200;
/** The longest requested model name kept; the request stage has already resolved it to a real model. */
const MODEL_NAME_MAX = 200;

export interface ClientTrail {
  readonly sessionId: string | null;
  readonly userAgent: string | null;
  readonly origin: ChargeOrigin | null;
  readonly requestedModel: string | null;
}

type HeaderOf = (field: string) => string;

/** The first session header whose value is printable ASCII of at most 128 characters; null if none. */
export function sessionIdOf(header: HeaderOf): string | null {
  for (const name of SESSION_HEADERS) {
    const value = header(name);
    if (value !== '') return SESSION_ID.test(value) ? value : null;
  }
  return null;
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Printable text only (control characters become '?'), at most `max` characters; null when empty. A
 * value that needs no change (nearly every User-Agent) is returned as it is, without a copy.
 */
function printable(value: string, max: number): string | null {
  if (value === '') return null;
  const cut = value.length > max ? value.slice(0, max) : value;
  return CONTROL.test(cut) ? cut.replace(CONTROLS, '?') : cut;
}

/** A model name as the client wrote it, printable and clipped; null when it is not a string. */
export function modelNameOf(asked: unknown): string | null {
  return typeof asked === 'string' ? printable(asked, MODEL_NAME_MAX) : null;
}

export function clientTrail(header: HeaderOf, askedModel: unknown, resolvedModel: string): ClientTrail {
  return {
    sessionId: sessionIdOf(header),
    userAgent: printable(header('user-agent'), USER_AGENT_MAX),
    origin: header(ORIGIN_HEADER) === 'playground' ? 'playground' : null,
    requestedModel: typeof askedModel === 'string' && askedModel !== resolvedModel ? printable(askedModel, MODEL_NAME_MAX) : null,
  };
}
