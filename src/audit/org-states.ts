/** What the audit log keeps of organisations' changes: ids, names, roles and limits, never a secret. */
import { formatUnits } from '../billing/money';
import type { Account } from '../store/store';
import type { Invitation, MemberLimits, Membership } from '../store/orgs';
import type { AuditChange } from './states';

function limitsState(limits: MemberLimits) {
  const budget = limits.budget === null ? null : { amount: formatUnits(limits.budget.amount), period: limits.budget.period, timezone: limits.budget.timezone };
  return { budget, models: limits.models, rate_limits: limits.rateLimits };
}

export function organisationCreated(organisation: Account, owner: Account): AuditChange {
  return { action: 'org.create', target: organisation.id, accountId: organisation.id, before: null, after: { name: organisation.name, owner: owner.id } };
}

export function invitationMade(invitation: Invitation): AuditChange {
  return {
    action: 'org.invite',
    target: invitation.id,
    accountId: invitation.organisationId,
    before: null,
    after: { invitee: invitation.invitee, role: invitation.role, expires_at: invitation.expiresAt.toISOString() },
  };
}

export function invitationRevoked(invitation: Invitation): AuditChange {
  return { action: 'org.invitation_revoke', target: invitation.id, accountId: invitation.organisationId, before: { invitee: invitation.invitee, role: invitation.role }, after: null };
}

export function memberJoined(member: Membership, invitationId: string): AuditChange {
  return { action: 'org.join', target: member.accountId, accountId: member.organisationId, before: null, after: { role: member.role, invitation: invitationId } };
}

export function memberRoleChanged(before: Membership, role: Membership['role']): AuditChange {
  return { action: 'org.role', target: before.accountId, accountId: before.organisationId, before: { role: before.role }, after: { role } };
}

export function memberRemoved(member: Membership): AuditChange {
  return { action: 'org.remove', target: member.accountId, accountId: member.organisationId, before: { role: member.role }, after: null };
}

export function memberLimitsChanged(before: Membership, after: Membership): AuditChange {
  return { action: 'org.member_limits', target: before.accountId, accountId: before.organisationId, before: limitsState(before.limits), after: limitsState(after.limits) };
}
