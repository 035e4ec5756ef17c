/**
 * What the management-API suites share: a gateway.yaml with priced models served by the fake
 * upstream, accounts with a password (hashed once per process: scrypt costs ~0.3 s), and requests to
 * `/v1` so that keys are exercised and usage rows exist.
 */
import { hashPassword } from '../../src/auth/passwords';
import type { Account, AccountRole, ChargeRecord, Store } from '../../src/store/store';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

/** The password of every account the suites create. */
export const PASSWORD = 'correct horse battery staple';

let hashed: Promise<string> | null = null;

/** The scrypt hash of PASSWORD, computed once for all suites. */
export function passwordHash(): Promise<string> {
  hashed ??= hashPassword(PASSWORD);
  return hashed;
}

/** Creates an account that logs in with PASSWORD. */
export async function addAccount(store: Store, name: string, role: AccountRole = 'user', email: string | null = null): Promise<Account> {
  return store.createAccount({ name, role, email, passwordHash: await passwordHash() });
}

/** Prices per 1M tokens: gpt-priced costs 1,000 nano-units per input token and 5,000 per output token. */
export const PRICES = {
  'gpt-priced': { input: '1', cache_write: '1.25', cache_hit: '0.1', output: '5' },
  'claude-priced': { input: '3', cache_write: '3.75', cache_hit: '0.3', output: '15' },
} as const;

export interface YamlOptions {
  /** Extra fields of `server:` (flow style, e.g. `trust_proxy: true`). */
  readonly server?: string;
  /**
   * Fields of `console:` (flow style); the login limiter is off unless given, and no second factor is
   * required unless `require_2fa` is among them (the suites sign administrators in).
   */
  readonly console?: string;
  /** Extra lines under `plugins:` (indented by two spaces). */
  readonly plugins?: string;
  /** The upstream plugin's section (flow style). */
  readonly upstream?: string;
}

function consoleFields(fields: string): string {
  return fields.includes('require_2fa') ? fields : `require_2fa: none, ${fields}`;
}

/** The suites' gateway.yaml: two priced models and a free one, served by the fake upstream. */
export function consoleYaml(upstreamUrl: string, options: YamlOptions = {}): string {
  const base = upstreamUrl.replace(/\/+$/, '');
  const gpt = PRICES['gpt-priced'];
  const claude = PRICES['claude-priced'];
  return `
version: 1
server: { host: 127.0.0.1${options.server === undefined ? '' : `, ${options.server}`} }
store: { url: "sqlite::memory:" }
console: { ${consoleFields(options.console ?? 'login_failures_per_window: 0')} }
providers:
  anthropic: { protocol: anthropic, base_url: ${base}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${base}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced:
    family: openai
    routes: [{ provider: openai }]
    price: { input: ${gpt.input}, cache_write: ${gpt.cache_write}, cache_hit: ${gpt.cache_hit}, output: ${gpt.output} }
    max_output_tokens: 1000
    context_window: 200000
    description: "A priced test model"
  claude-priced:
    family: anthropic
    routes: [{ provider: anthropic }]
    price: { input: ${claude.input}, cache_write: ${claude.cache_write}, cache_hit: ${claude.cache_hit}, output: ${claude.output} }
    max_output_tokens: 2000
    context_window: 200000
  gpt-free: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  auth: { failures_per_minute: 0 }
  billing: { flush_interval_ms: 10 }
  upstream: ${options.upstream ?? '{ failover: { max_attempts: 1 } }'}
${options.plugins ?? ''}
`;
}

export interface V1Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly json: any;
}

/** POST /v1/chat/completions with `headers` (e.g. `authorization: Bearer sk-…`). */
export async function chatWith(url: string, headers: Record<string, string>, model = 'gpt-free'): Promise<V1Answer> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

/** A chat request with API key `key`. */
export function chat(url: string, key: string, model = 'gpt-free'): Promise<V1Answer> {
  return chatWith(url, { authorization: `Bearer ${key}` }, model);
}

/** A Messages request with API key `key`. */
export async function messages(url: string, key: string, model = 'claude-priced'): Promise<V1Answer> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

/** Polls `read` until `done` holds; fails after `timeoutMs`. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Waits until the ledger holds `count` charges of `accountId` (the billing plugin writes them in batches). */
export function chargesOf(store: Store, accountId: string, count: number): Promise<ChargeRecord[]> {
  return waitFor(() => store.listCharges({ accountId, limit: 1000 }), (list) => list.length >= count, `${count} charge(s) of ${accountId}`);
}

/** Every route behind a sign-in, with a body valid enough that only the credential is at fault. */
export const SIGNED_IN_ROUTES: readonly (readonly [method: string, path: string, body?: unknown])[] = [
  ['GET', '/api/session'],
  ['DELETE', '/api/session'],
  ['PUT', '/api/account/password', { current_password: PASSWORD, new_password: 'another long password' }],
  ['GET', '/api/account'],
  ['GET', '/api/usage/daily'],
  ['GET', '/api/credits'],
  ['GET', '/api/keys'],
  ['POST', '/api/keys', { name: 'k' }],
  ['POST', '/api/playground/key', {}],
  ['PATCH', '/api/keys/key_0000000000000000', { spend_limit: '1' }],
  ['DELETE', '/api/keys/key_0000000000000000'],
  ['POST', '/api/topup/redeem', { code: 'tg-AAAAAAAAAAAAAAAAAAAAAAAA' }],
  ['GET', '/api/usage'],
  ['GET', '/api/usage?format=csv'],
  ['GET', '/api/usage/summary?group_by=day'],
  ['GET', '/api/usage/summary?group_by=model&format=csv'],
  ['GET', '/api/usage/sessions'],
  ['GET', '/api/usage/refusals'],
  ['GET', '/api/budgets'],
  ['GET', '/api/tokens'],
  ['POST', '/api/tokens', { name: 't', password: PASSWORD }],
  ['DELETE', '/api/tokens/ses_0000000000000000'],
  ['GET', '/api/account/2fa'],
  ['POST', '/api/account/2fa', { password: PASSWORD }],
  ['POST', '/api/account/2fa/confirm', { code: '123456' }],
  ['DELETE', '/api/account/2fa', { password: PASSWORD }],
  ['GET', '/api/account/sessions'],
  ['DELETE', '/api/account/sessions'],
  ['DELETE', '/api/account/sessions/ses_0000000000000000'],
  ['GET', '/api/payments/options'],
  ['GET', '/api/payments'],
  ['POST', '/api/payments/checkout', { amount: 1000 }],
  ['PUT', '/api/payments/auto-recharge', { enabled: false }],
  ['GET', '/api/transfers'],
  ['POST', '/api/transfers', { from_account_id: 'acc_0000000000000000', to_account_id: 'acc_0000000000000001', amount: '1' }],
  ['GET', '/api/orgs'],
  ['POST', '/api/orgs', { name: 'made-by-route-table' }],
  ['PATCH', '/api/orgs/acc_0000000000000000/members/{accountId}', { role: 'member' }],
  ['DELETE', '/api/orgs/acc_0000000000000000/members/{accountId}'],
  ['POST', '/api/orgs/acc_0000000000000000/invitations', { invitee: 'someone' }],
  ['DELETE', '/api/orgs/acc_0000000000000000/invitations/{invitationId}'],
  ['POST', '/api/invitations/accept', { secret: 'tgi_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
  ['POST', '/api/orgs/acc_0000000000000000/keys', { name: 'k' }],
  ['PATCH', '/api/orgs/acc_0000000000000000/keys/{keyId}', { spend_limit: '1' }],
  ['DELETE', '/api/orgs/acc_0000000000000000/keys/{keyId}'],
  ['GET', '/api/statements'],
];

/** Signed-in routes that look one thing up by id: for these placeholder ids, 404 once signed in. */
export const SIGNED_IN_LOOKUPS: readonly (readonly [method: string, path: string])[] = [
  ['GET', '/api/usage/sessions/ses_0000000000000000'],
  ['GET', '/api/usage/requests/req_0000000000000000'],
  // Without payments.stripe (as in the suites' config) these answer 404 too.
  ['GET', '/api/payments/{id}'],
  ['GET', '/api/payments/auto-recharge'],
  // An organisation the caller is not in is not found, whatever is asked of it.
  ['GET', '/api/orgs/acc_0000000000000000'],
  ['GET', '/api/orgs/acc_0000000000000000/members'],
  ['GET', '/api/orgs/acc_0000000000000000/invitations'],
  ['GET', '/api/orgs/acc_0000000000000000/keys'],
  ['GET', '/api/orgs/acc_0000000000000000/usage'],
  ['GET', '/api/orgs/acc_0000000000000000/usage/summary?group_by=member'],
  ['GET', '/api/orgs/acc_0000000000000000/usage/sessions'],
  ['GET', '/api/orgs/acc_0000000000000000/usage/sessions/{sessionId}'],
  ['GET', '/api/orgs/acc_0000000000000000/usage/requests/{requestId}'],
  ['GET', '/api/orgs/acc_0000000000000000/statements'],
  ['GET', '/api/orgs/acc_0000000000000000/statements/{statementId}'],
  ['GET', '/api/statements/{id}'],
];

/** Every administrators' route; `{id}` is replaced by an existing account's id. */
export const ADMIN_ROUTES: readonly (readonly [method: string, path: string, body?: unknown])[] = [
  ['GET', '/api/admin/accounts'],
  ['GET', '/api/admin/payments'],
  ['GET', '/api/admin/money'],
  ['POST', '/api/admin/payments/reconcile'],
  ['POST', '/api/admin/accounts', { name: 'made-by-user', password: 'long enough password', role: 'admin' }],
  ['PATCH', '/api/admin/accounts/{id}', { disabled: true }],
  ['POST', '/api/admin/accounts/{id}/credits', { amount: '100', note: 'self-service' }],
  ['POST', '/api/admin/accounts/{id}/debits', { amount: '1', note: 'self-service' }],
  ['GET', '/api/admin/redemption-codes'],
  ['GET', '/api/admin/redemption-codes?format=csv'],
  ['POST', '/api/admin/redemption-codes', { count: 1, amount: '100' }],
  ['POST', '/api/admin/redemption-codes?format=csv', { count: 1, amount: '100' }],
  ['GET', '/api/admin/providers'],
  ['GET', '/api/admin/audit'],
  ['GET', '/api/admin/audit?format=csv'],
  ['DELETE', '/api/admin/accounts/{id}/sessions'],
  ['GET', '/api/admin/accounts/{id}/keys'],
  ['PATCH', '/api/admin/keys/key_0000000000000000', { spend_limit: '1' }],
  ['GET', '/api/admin/orgs'],
  ['GET', '/api/admin/orgs/{id}/members'],
  ['PATCH', '/api/admin/accounts/{id}/limits', { models: null }],
  ['GET', '/api/admin/statements?account={id}'],
  ['GET', '/api/admin/statements/{id}'],
];
