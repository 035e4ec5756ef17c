/**
 * A small client of the management API for tests, on Node's global fetch: log in once, keep the
 * session cookie and the CSRF token, and send JSON. `ApiClient.bearer` is the management-token variant
 * (no cookie, no CSRF). Every answer is recorded in `ApiClient.seen`, so a suite can check that a
 * secret (a provider key) never appears in any of them.
 */
import { expect } from 'chai';
import { SESSION_COOKIE } from '../../src/admin/secrets';

export interface ApiAnswer<T = any> {
  readonly status: number;
  readonly headers: Headers;
  /** The parsed JSON body, or null when the answer is not JSON. */
  readonly body: T;
  readonly text: string;
  /** `Set-Cookie` lines of the answer. */
  readonly cookies: string[];
}

export interface RequestOptions {
  /** Sent as JSON (`content-type: application/json`) unless it is a string. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Send the CSRF token on a state-changing request (default true when the client has one). */
  readonly csrf?: boolean;
}

/** The value of the session cookie in `Set-Cookie` lines, or null when none sets it. */
export function sessionCookieOf(setCookies: readonly string[]): string | null {
  for (const line of setCookies) {
    const match = new RegExp(`^${SESSION_COOKIE}=([^;]*)`).exec(line);
    if (match !== null) return match[1];
  }
  return null;
}

/** Sends one request to `baseUrl + path` and reads the answer whole. */
export async function send(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<ApiAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
  const text = await res.text();
  let parsed: unknown = null;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) parsed = JSON.parse(text);
  const answer: ApiAnswer = { status: res.status, headers: res.headers, body: parsed, text, cookies: res.headers.getSetCookie() };
  ApiClient.seen.push(answer);
  return answer;
}

export class ApiClient {
  /** Every answer any client (or `send`) received in this process. */
  static readonly seen: ApiAnswer[] = [];

  constructor(
    readonly baseUrl: string,
    /** The session cookie's value; null for a bearer or anonymous client. */
    public cookie: string | null = null,
    public csrfToken: string | null = null,
    /** A management token (`tgm_…`) or anything else to send as `Authorization: Bearer`. */
    readonly bearerToken: string | null = null,
  ) {}

  static anonymous(baseUrl: string): ApiClient {
    return new ApiClient(baseUrl);
  }

  static bearer(baseUrl: string, token: string): ApiClient {
    return new ApiClient(baseUrl, null, null, token);
  }

  /** Logs in and fails the test unless it succeeds; `headers` go with the login request. */
  static async login(baseUrl: string, login: string, password: string, headers: Record<string, string> = {}): Promise<ApiClient> {
    const { client, answer } = await ApiClient.tryLogin(baseUrl, login, password, headers);
    expect(answer.status, `login of ${login}: ${answer.text}`).to.equal(200);
    return client!;
  }

  /** Logs in; `client` is null when the login failed. */
  static async tryLogin(
    baseUrl: string,
    login: string,
    password: string,
    headers: Record<string, string> = {},
  ): Promise<{ client: ApiClient | null; answer: ApiAnswer }> {
    const answer = await send(baseUrl, 'POST', '/api/session', { body: { login, password }, headers });
    const cookie = sessionCookieOf(answer.cookies);
    if (answer.status !== 200 || cookie === null) return { client: null, answer };
    return { client: new ApiClient(baseUrl, cookie, answer.body.csrf_token as string), answer };
  }

  /** A client with the same credentials (the cookie can then be changed on one of them). */
  copy(): ApiClient {
    return new ApiClient(this.baseUrl, this.cookie, this.csrfToken, this.bearerToken);
  }

  headersFor(method: string, options: RequestOptions): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.cookie !== null) headers.cookie = `${SESSION_COOKIE}=${this.cookie}`;
    if (this.bearerToken !== null) headers.authorization = `Bearer ${this.bearerToken}`;
    const changes = !['GET', 'HEAD', 'OPTIONS'].includes(method);
    if (changes && this.csrfToken !== null && options.csrf !== false) headers['x-csrf-token'] = this.csrfToken;
    return { ...headers, ...options.headers };
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiAnswer> {
    const answer = await send(this.baseUrl, method, path, { ...options, headers: this.headersFor(method, options) });
    // Follow the server's cookie changes, as a browser would (rotation at login, clearing at logout).
    const cookie = sessionCookieOf(answer.cookies);
    if (cookie !== null) this.cookie = cookie === '' ? null : cookie;
    return answer;
  }

  get(path: string, options: RequestOptions = {}): Promise<ApiAnswer> {
    return this.request('GET', path, options);
  }

  post(path: string, body: unknown = {}, options: RequestOptions = {}): Promise<ApiAnswer> {
    return this.request('POST', path, { ...options, body });
  }

  patch(path: string, body: unknown = {}, options: RequestOptions = {}): Promise<ApiAnswer> {
    return this.request('PATCH', path, { ...options, body });
  }

  put(path: string, body: unknown = {}, options: RequestOptions = {}): Promise<ApiAnswer> {
    return this.request('PUT', path, { ...options, body });
  }

  delete(path: string, options: RequestOptions = {}): Promise<ApiAnswer> {
    return this.request('DELETE', path, options);
  }

  /** Creates an API key through the API and returns its id and secret. */
  async createKey(body: Record<string, unknown> = {}): Promise<{ id: string; secret: string; key: any }> {
    const answer = await this.post('/api/keys', body);
    expect(answer.status, answer.text).to.equal(201);
    return { id: answer.body.key.id, secret: answer.body.secret, key: answer.body.key };
  }
}

/** Asserts the API's error shape: status, code and (when given, or `null` for none) field. */
export function expectError(answer: ApiAnswer, status: number, code: string, field?: string | null): void {
  expect(answer.status, answer.text).to.equal(status);
  expect(answer.headers.get('content-type')).to.match(/^application\/json/);
  expect(answer.body?.error?.code, answer.text).to.equal(code);
  expect(answer.body.error.message).to.be.a('string').and.not.equal('');
  if (field === null) expect(answer.body.error).to.not.have.property('field');
  else if (field !== undefined) expect(answer.body.error.field, answer.text).to.equal(field);
}
