/** The rows of memberships and invitations, and their records, for both stores (see rows.ts). */
import type { KeyRateLimits } from './access-store';
import type { Invitation, MemberLimits, MemberRole, Membership } from './orgs';
import { budgetOf, budgetText, type ColumnCodec, type ColumnTypes } from './rows';

export interface MembershipRow<T extends ColumnTypes> {
  organisation_id: string;
  account_id: string;
  name: string;
  email: string | null;
  role: MemberRole;
  created_at: T['date'];
  budget: string | null;
  /** JSON array of model ids, in both stores. */
  models: string | null;
  /** JSON `KeyRateLimits`, in both stores. */
  rate_limits: string | null;
}

export interface InvitationRow<T extends ColumnTypes> {
  id: string;
  organisation_id: string;
  invitee: string;
  role: MemberRole;
  created_by: string;
  created_at: T['date'];
  expires_at: T['date'];
  accepted_by: string | null;
  accepted_at: T['date'] | null;
  revoked_at: T['date'] | null;
}

/** The membership columns of `memberships m JOIN accounts a ON a.id = m.account_id`. */
export const MEMBERSHIP_COLUMNS = 'm.organisation_id, m.account_id, a.name, a.email, m.role, m.created_at, m.budget, m.models, m.rate_limits';

export const INVITATION_COLUMNS = 'id, organisation_id, invitee, role, created_by, created_at, expires_at, accepted_by, accepted_at, revoked_at';

/** Each limit given as its column's text: absent fields are left out (kept). */
export function memberLimitColumns(limits: Partial<MemberLimits>): [column: 'budget' | 'models' | 'rate_limits', text: string | null][] {
  const columns: [column: 'budget' | 'models' | 'rate_limits', text: string | null][] = [];
  if (limits.budget !== undefined) columns.push(['budget', budgetText(limits.budget)]);
  if (limits.models !== undefined) columns.push(['models', limits.models === null ? null : JSON.stringify(limits.models)]);
  if (limits.rateLimits !== undefined) columns.push(['rate_limits', limits.rateLimits === null ? null : JSON.stringify(limits.rateLimits)]);
  return columns;
}

function memberLimitsOf(row: { budget: string | null; models: string | null; rate_limits: string | null }): MemberLimits {
  return {
    budget: budgetOf(row.budget),
    models: row.models === null ? null : (JSON.parse(row.models) as string[]),
    rateLimits: row.rate_limits === null ? null : (JSON.parse(row.rate_limits) as KeyRateLimits),
  };
}

export function orgRowMappers<T extends ColumnTypes>(codec: ColumnCodec<T>) {
  const optionalDate = (value: T['date'] | null): Date | null => (value === null ? null : codec.date(value));
  return {
    toMembership(row: MembershipRow<T>): Membership {
      return {
        organisationId: row.organisation_id,
        accountId: row.account_id,
        accountName: row.name,
        accountEmail: row.email,
        role: row.role,
        createdAt: codec.date(row.created_at),
        limits: memberLimitsOf(row),
      };
    },
    toInvitation(row: InvitationRow<T>): Invitation {
      return {
        id: row.id,
        organisationId: row.organisation_id,
        invitee: row.invitee,
        role: row.role,
        createdBy: row.created_by,
        createdAt: codec.date(row.created_at),
        expiresAt: codec.date(row.expires_at),
        acceptedBy: row.accepted_by,
        acceptedAt: optionalDate(row.accepted_at),
        revokedAt: optionalDate(row.revoked_at),
      };
    },
  };
}
