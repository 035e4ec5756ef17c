// The one way the console talks to the management API: JSON in and out, the CSRF
// header on state-changing requests, and every failure turned into an ApiError.
import { navigate } from './router.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The request-body field at fault, so a form can show the message beside it. */
    readonly field?: string,
    /** Seconds to wait, from the retry-after header of a 429. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface RequestOptions {
  signal?: AbortSignal;
}

type QueryValue = string | number | null | undefined;

let csrfToken: string | null = null;
let onUnauthenticated: (() => void) | null = null;

/** The token sent as `x-csrf-token`; set from login, sign-up and GET /api/session. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called when a signed-in request is refused because the session has ended. */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

/** Appends the non-empty values as a query string. */
export function withQuery(path: string, query: Record<string, QueryValue>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== '') params.set(name, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

export function apiGet<T>(path: string, options?: RequestOptions): Promise<T> {
  return request<T>('GET', path, undefined, options);
}

export function apiPost<T>(path: string, body?: unknown, options?: RequestOptions): Promise<T> {
  return request<T>('POST', path, body, options);
}

export function apiPatch<T>(path: string, body: unknown, options?: RequestOptions): Promise<T> {
  return request<T>('PATCH', path, body, options);
}

export function apiPut<T>(path: string, body: unknown, options?: RequestOptions): Promise<T> {
  return request<T>('PUT', path, body, options);
}

export function apiDelete<T>(path: string, options?: RequestOptions, body?: unknown): Promise<T> {
  return request<T>('DELETE', path, body, options);
}

async function request<T>(method: Method, path: string, body: unknown, options?: RequestOptions): Promise<T> {
  let response = await send(method, path, body, options);
  if (method !== 'GET' && (await isCsrfFailure(response)) && (await refreshCsrfToken())) {
    // The token can go stale (e.g. after logging in from another tab); one retry with a fresh one.
    response = await send(method, path, body, options);
  }
  if (!response.ok) {
    const error = await toApiError(response);
    if (error.code === 'unauthenticated') onUnauthenticated?.();
    // The account must enrol a second factor first: the Account page is where that happens.
    if (error.code === 'two_factor_enrolment_required' && !window.location.pathname.startsWith('/console/account')) navigate('/console/account');
    throw error;
  }
  return readBody<T>(response);
}

async function send(method: Method, path: string, body: unknown, options?: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) init.body = JSON.stringify(body);
  if (options?.signal) init.signal = options.signal;
  try {
    return await fetch(path, init);
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network_error', 'Could not reach the server. Check your connection and try again.');
  }
}

async function isCsrfFailure(response: Response): Promise<boolean> {
  if (response.status !== 403) return false;
  const error = await toApiError(response.clone());
  return error.code === 'csrf_failed';
}

async function refreshCsrfToken(): Promise<boolean> {
  const response = await fetch('/api/session', { headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (!response.ok) return false;
  const session = (await response.json()) as { csrf_token?: unknown };
  if (typeof session.csrf_token !== 'string') return false;
  csrfToken = session.csrf_token;
  return true;
}

async function readBody<T>(response: Response): Promise<T> {
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

async function toApiError(response: Response): Promise<ApiError> {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  let payload: unknown;
  try {
    payload = await response.json();
  } catch {
    payload = undefined;
  }
  const error = (payload as { error?: { code?: unknown; message?: unknown; field?: unknown } } | undefined)?.error;
  if (error && typeof error.code === 'string') {
    const message = typeof error.message === 'string' && error.message ? error.message : error.code;
    const field = typeof error.field === 'string' ? error.field : undefined;
    return new ApiError(response.status, error.code, message, field, retryAfter);
  }
  // Not our JSON error shape: a proxy page, a crash, a timeout.
  return new ApiError(response.status, `http_${response.status}`, `The server answered ${response.status} ${response.statusText}`.trim(), undefined, retryAfter);
}

function parseRetryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number.parseInt(header, 10);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}

/** A message fit to show a person, whatever was thrown. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'too_many_attempts' && error.retryAfter !== undefined) {
      return `${error.message} Try again in ${error.retryAfter} seconds.`;
    }
    return error.message;
  }
  if (error instanceof Error) return error.message;
  return 'Something went wrong.';
}
