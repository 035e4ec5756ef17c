/**
 * Which client headers reach a provider on a native request, per provider protocol, and why: one
 * table, an allow-list (docs/decisions.md#d17-forwarded-headers-are-an-allow-list). A header is
 * forwarded only where its protocol's row says so; the gateway's own and the transport's are replaced
 * by what the gateway sends; every other header stays behind and is counted
 * (`tollgate_upstream_headers_dropped_total`), by its name where this table names it, else as `other`.
 * A translated request carries none of the client's headers (`src/upstream/headers.ts`).
 */
import type { ProviderProtocol } from '../config/types';

/**
 * What becomes of one client header. `forward`: sent as the client sent it, or, with `values`, only
 * the comma-separated values listed (compared case-insensitively; none left, the header is dropped).
 * `drop`: stays behind, counted. `replaced`: the gateway sends its own (a credential, the transport,
 * a value written into the body), so the client's is not counted as dropped.
 */
interface HeaderRule {
  readonly action: 'forward' | 'drop' | 'replaced';
  readonly why: string;
  readonly values?: readonly string[];
}

type HeaderTable = Readonly<Record<string, HeaderRule>>;

const forward = (why: string, values?: readonly string[]): HeaderRule => (values === undefined ? { action: 'forward', why } : { action: 'forward', why, values });
const drop = (why: string): HeaderRule => ({ action: 'drop', why });
const replaced = (why: string): HeaderRule => ({ action: 'replaced', why });

const CREDENTIAL = "a client credential: the gateway's key never leaves it, the provider's replaces it";
const TRANSPORT = 'the transport of the client leg; the gateway opens its own connection';

/** Replaced on every protocol: credentials, the transport, and what the gateway itself reads. */
const GATEWAY_OWN: HeaderTable = {
  authorization: replaced(CREDENTIAL),
  'x-api-key': replaced(CREDENTIAL),
  'api-key': replaced(CREDENTIAL),
  'x-goog-api-key': replaced(CREDENTIAL),
  'proxy-authorization': replaced(CREDENTIAL),
  cookie: replaced("the console's sign-in cookie, the gateway's business only"),
  host: replaced(TRANSPORT),
  connection: replaced(TRANSPORT),
  'keep-alive': replaced(TRANSPORT),
  'proxy-connection': replaced(TRANSPORT),
  'transfer-encoding': replaced(TRANSPORT),
  te: replaced(TRANSPORT),
  trailer: replaced(TRANSPORT),
  upgrade: replaced(TRANSPORT),
  expect: replaced(TRANSPORT),
  'sec-websocket-key': replaced(TRANSPORT),
  'sec-websocket-version': replaced(TRANSPORT),
  'sec-websocket-extensions': replaced(TRANSPORT),
  'sec-websocket-protocol': replaced(TRANSPORT),
  'content-length': replaced('the gateway sends the length of the body it sends'),
  'content-type': replaced('the gateway always sends JSON'),
  'content-encoding': replaced('the gateway decoded the body; it sends it uncompressed'),
  'accept-encoding': replaced('the gateway reads the reply for usage, so it asks for it uncompressed'),
  'x-request-id': replaced("the gateway sends the request's id (the client's, when well-formed)"),
  traceparent: replaced("the attempt's span sends its own trace context"),
  tracestate: replaced("the attempt's span sends its own trace context"),
  'x-forwarded-for': replaced("read for the client's address behind a trusted proxy; the provider sees the gateway"),
  'x-forwarded-proto': replaced("read behind a trusted proxy; the provider sees the gateway's own request"),
  'x-forwarded-host': replaced("read behind a trusted proxy; the provider sees the gateway's own request"),
  forwarded: replaced("read behind a trusted proxy; the provider sees the gateway's own request"),
  'x-real-ip': replaced("read behind a trusted proxy; the provider sees the gateway"),
  'x-tollgate-session': replaced("the gateway's own session header, recorded with the charge"),
  'x-tollgate-origin': replaced("the gateway's own mark of the console's playground"),
};

/** Forwarded to every provider that takes them. */
const CLIENT_NAME = forward('names the client and its version, as the provider would see it without the gateway; no credential');
const ACCEPT = forward('says whether the client reads JSON or an event stream');

/** Headers a browser adds (the console's playground): they describe the browser's leg. */
const BROWSER: HeaderTable = {
  origin: drop("a browser's page origin; the gateway's call is no browser's"),
  referer: drop("a browser's page address; the gateway's call is no browser's"),
  'accept-language': drop("a browser's languages; the APIs answer in the language of the prompt"),
};

/** The Stainless-built SDKs (openai, @anthropic-ai/sdk) describe themselves and their retries. */
const STAINLESS_WHY = "SDK diagnostics (the client's OS, runtime, retry count, timeout): they describe the client's leg, not the gateway's";
const STAINLESS: HeaderTable = Object.fromEntries(
  ['lang', 'package-version', 'os', 'arch', 'runtime', 'runtime-version', 'retry-count', 'timeout', 'helper-method', 'async'].map((name) => [`x-stainless-${name}`, drop(STAINLESS_WHY)]),
);

const ANTHROPIC_ACCOUNT = "chooses among the provider's own workspaces or profiles: the account upstream is the operator's (a provider's `headers`), never a client's";

/** What the Anthropic SDKs and Claude Code send that no provider needs from the gateway. */
const ANTHROPIC_DROPPED: HeaderTable = {
  'anthropic-organization-id': drop(ANTHROPIC_ACCOUNT),
  'anthropic-workspace-id': drop(ANTHROPIC_ACCOUNT),
  'anthropic-user-profile-id': drop(ANTHROPIC_ACCOUNT),
  'anthropic-dangerous-direct-browser-access': drop("lets a browser call the API with a key in the page; the gateway's call is no browser's"),
  'x-app': drop("Claude Code's name for itself; user-agent says it"),
};

const BETA_HEADER = 'turns on the beta features the request is written for; the priced ones are checked against the model first (docs/billing.md#premium-service)';
const SESSION_WHY = 'the conversation the request belongs to, no account or credential: an upstream (or a gateway behind this one) keeps a conversation together with it, as without the gateway';

const ANTHROPIC: HeaderTable = {
  ...GATEWAY_OWN,
  ...BROWSER,
  ...STAINLESS,
  ...ANTHROPIC_DROPPED,
  accept: ACCEPT,
  'user-agent': CLIENT_NAME,
  'anthropic-version': forward("required by the Messages API; the client's own is kept (docs/decisions.md#d6-anthropic-version-is-the-clients)"),
  'anthropic-beta': forward(BETA_HEADER),
  'x-claude-code-session-id': forward(SESSION_WHY),
};

const OPENAI_ACCOUNT = "chooses among the provider's own organisations or projects: the account upstream is the operator's (a provider's `headers`), never a client's";
const CODEX_NAME = "Codex's name and version for the ChatGPT backend; user-agent says it";

const OPENAI: HeaderTable = {
  ...GATEWAY_OWN,
  ...BROWSER,
  ...STAINLESS,
  accept: ACCEPT,
  'user-agent': CLIENT_NAME,
  // Only the Responses beta Codex sends over HTTP: `responses_websockets=…` names the client's
  // WebSocket leg (the gateway's leg is HTTP), and other betas belong to endpoints not served here.
  'openai-beta': forward('opts in to the Responses API as Codex speaks it', ['responses=experimental']),
  session_id: forward(SESSION_WHY),
  'openai-organization': drop(OPENAI_ACCOUNT),
  'openai-project': drop(OPENAI_ACCOUNT),
  'chatgpt-account-id': drop("the client's ChatGPT account: the provider is the operator's API account, which no client chooses"),
  originator: drop(CODEX_NAME),
  version: drop(CODEX_NAME),
  conversation_id: drop('the same id as session_id, which is forwarded'),
  'x-codex-turn-state': drop("a routing token of the ChatGPT backend; an API provider has no use for it"),
  'x-codex-turn-metadata': drop("Codex's notes on the turn for the ChatGPT backend"),
  'x-codex-beta-features': drop("Codex's own feature flags"),
  'x-openai-subagent': drop("Codex's label for a sub-agent's request, for the ChatGPT backend"),
};

const CLOUD_ANTHROPIC_DROPPED: HeaderTable = {
  ...GATEWAY_OWN,
  ...BROWSER,
  ...STAINLESS,
  ...ANTHROPIC_DROPPED,
  'user-agent': CLIENT_NAME,
  'x-claude-code-session-id': drop('a Claude Code gateway header; the cloud endpoint does not read it'),
};

const VERTEX: HeaderTable = {
  ...CLOUD_ANTHROPIC_DROPPED,
  accept: ACCEPT,
  // Vertex reads betas from the header, as the Messages API does.
  'anthropic-beta': forward(BETA_HEADER),
  'anthropic-version': replaced('Vertex reads the version from the body, where the gateway writes its own (vertex-2023-10-16)'),
};

const BEDROCK: HeaderTable = {
  ...CLOUD_ANTHROPIC_DROPPED,
  accept: replaced('Bedrock is asked for JSON or its event stream by the gateway (a client\'s text/event-stream would be refused)'),
  'anthropic-beta': replaced('Bedrock reads betas from the body: the gateway moves them into `anthropic_beta`'),
  'anthropic-version': replaced('Bedrock reads the version from the body, where the gateway writes its own'),
};

/** The demo provider answers in process and reads no header. */
const ECHO: HeaderTable = { ...GATEWAY_OWN, ...BROWSER, ...STAINLESS, accept: ACCEPT, 'user-agent': CLIENT_NAME };

export const FORWARDED_HEADERS: { readonly [P in ProviderProtocol]: HeaderTable } = {
  anthropic: ANTHROPIC,
  openai: OPENAI,
  vertex: VERTEX,
  bedrock: BEDROCK,
  echo: ECHO,
};

/** The `header` label of a dropped header: its name where the protocol's table names it, else `other` (bounded). */
export function droppedHeaderLabel(protocol: ProviderProtocol, name: string): string {
  return Object.hasOwn(FORWARDED_HEADERS[protocol], name) ? name : 'other';
}
