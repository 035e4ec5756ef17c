/** Organisations, members and invitations as the management API shows them. */
import { formatUnits } from '../billing/money';
import type { Account, AccountBalance, ApiKeyRecord, BudgetCheck } from '../store/store';
import type { Invitation, Membership, MemberRole } from '../store/orgs';
import { budgetView, keyView } from './views';

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

/** An organisation as one of its members sees it: with their role and its balance. */
export function organisationView(organisation: Account, role: MemberRole | null, balance: AccountBalance | null) {
  return {
    id: organisation.id,
    name: organisation.name,
    created_at: iso(organisation.createdAt),
    disabled: organisation.disabled,
    role,
    balance: balance === null ? null : formatUnits(balance.balance),
    held: balance === null ? null : formatUnits(balance.held),
  };
}

/** A member's budget in its current period, and what they spent in it. */
export interface MemberSpend {
  readonly check: BudgetCheck;
  readonly spent: bigint;
}

/** `spend`: the member's budget's current period (shown to those who may see their limits); null: none, or not shown. */
export function memberView(member: Membership, spend: MemberSpend | null = null) {
  return {
    account_id: member.accountId,
    name: member.accountName,
    email: member.accountEmail,
    role: member.role,
    created_at: iso(member.createdAt),
    limits: {
      budget: budgetView(member.limits.budget),
      models: member.limits.models,
      rate_limits: member.limits.rateLimits,
    },
    budget_spent: spend === null ? null : { spent: formatUnits(spend.spent), period_start: iso(spend.check.start), resets_at: iso(spend.check.end) },
  };
}

export function invitationView(invitation: Invitation, now = Date.now()) {
  const status =
    invitation.acceptedAt !== null ? 'accepted' : invitation.revokedAt !== null ? 'revoked' : invitation.expiresAt.getTime() <= now ? 'expired' : 'open';
  return {
    id: invitation.id,
    organisation_id: invitation.organisationId,
    invitee: invitation.invitee,
    role: invitation.role,
    status,
    created_by: invitation.createdBy,
    created_at: iso(invitation.createdAt),
    expires_at: iso(invitation.expiresAt),
    accepted_by: invitation.acceptedBy,
    accepted_at: iso(invitation.acceptedAt),
    revoked_at: iso(invitation.revokedAt),
  };
}

/**
 * A key made inside an organisation, with the member who made it and their name (null once they
 * have left: their keys stay listed for an owner or admin to revoke).
 */
export function orgKeyView(key: ApiKeyRecord, memberNames: ReadonlyMap<string, string>, now = Date.now()) {
  const member = key.memberAccountId ?? null;
  return { ...keyView(key, now), member_account_id: member, member_name: member === null ? null : memberNames.get(member) ?? null };
}
