/**
 * Whose spend a charge or a hold counts in, for each budget scope: a key's is its key's, an account's
 * its account's, a member's the member's whose key (in the organisation) made it. One switch, so a new
 * scope is a compile error in every book and store that asks, not a silent miscount.
 */
import type { BudgetScope } from './ledger-store';

/** Every scope, once: a Record so that a scope left out here does not compile. */
const EVERY_SCOPE: Readonly<Record<BudgetScope, true>> = { key: true, member: true, account: true };
export const BUDGET_SCOPES = Object.keys(EVERY_SCOPE) as readonly BudgetScope[];

/** What a charge or a hold says about who made it. */
interface Made {
  readonly accountId: string;
  readonly keyId: string;
  readonly memberAccountId?: string | null;
}

/**
 * A member budget's id: the organisation and the member, '/' between. Neither id holds a '/' (accounts
 * are `acc_` and hex), nor a ':', which the Redis book's key names use as their own separator.
 */
export function memberBudgetId(organisationId: string, memberAccountId: string): string {
  return `${organisationId}/${memberAccountId}`;
}

/** The organisation and the member a member budget's id names. */
export function memberOfBudget(id: string): { readonly organisationId: string; readonly memberAccountId: string } {
  const slash = id.indexOf('/');
  if (slash <= 0 || slash === id.length - 1) throw new Error(`not a member budget id: ${JSON.stringify(id)}`);
  return { organisationId: id.slice(0, slash), memberAccountId: id.slice(slash + 1) };
}

/** The id of the `scope` budget that `made` counts in; null when it counts in none (a member budget, made by no member). */
export function budgetOwnerOf(made: Made, scope: BudgetScope): string | null {
  switch (scope) {
    case 'key':
      return made.keyId;
    case 'account':
      return made.accountId;
    case 'member':
      return made.memberAccountId == null ? null : memberBudgetId(made.accountId, made.memberAccountId);
    default:
      return unknownScope(scope);
  }
}

/** Whether `made` counts in the `scope` budget `id`. */
export function countsIn(made: Made, scope: BudgetScope, id: string): boolean {
  return budgetOwnerOf(made, scope) === id;
}

function unknownScope(scope: never): never {
  throw new Error(`unknown budget scope ${String(scope)}`);
}
