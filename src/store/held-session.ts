/**
 * The session a hold counts against: the one its session budgets name (every budget of one request
 * names the request's session); null when it was checked against none. A hold records it so the
 * session's holds can be summed while its requests are under way.
 */
import type { Hold } from './store';

export function heldSession(hold: Hold): string | null {
  return hold.sessionBudgets?.[0]?.sessionId ?? null;
}
