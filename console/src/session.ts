// Who is signed in. The CSRF token lives in memory only; on each page load it is
// fetched again with GET /api/session.
import { ApiError, apiGet, setCsrfToken } from './api.js';
import type { Account, SessionResponse } from './types.js';

let account: Account | null = null;

export function currentAccount(): Account | null {
  return account;
}

export function isAdmin(): boolean {
  return account?.role === 'admin';
}

export function startSession(response: SessionResponse): void {
  account = response.account;
  setCsrfToken(response.csrf_token);
}

export function endSession(): void {
  account = null;
  setCsrfToken(null);
}

/** Restores the session from the cookie; null when not signed in. */
export async function restoreSession(): Promise<Account | null> {
  try {
    startSession(await apiGet<SessionResponse>('/api/session'));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      endSession();
      return null;
    }
    throw error;
  }
  return account;
}
