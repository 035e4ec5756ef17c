/**
 * Organisations as the store keeps them: an organisation is an account nobody signs in to, and its
 * people are members with a role. The store keeps memberships and invitations atomically; what each
 * role may do is decided in src/admin/org-access.ts, never here. One rule is the store's own because
 * only a transaction can keep it: an organisation always has an owner.
 */
import type { Account, Budget, KeyRateLimits } from './access-store';

export type MemberRole = 'owner' | 'admin' | 'billing' | 'member';

export const MEMBER_ROLES: readonly MemberRole[] = ['owner', 'admin', 'billing', 'member'];

/** What an organisation lets one member spend through all of their keys in it; null: no limit. */
export interface MemberLimits {
  readonly budget: Budget | null;
  readonly models: readonly string[] | null;
  readonly rateLimits: KeyRateLimits | null;
}

export interface Membership {
  readonly organisationId: string;
  readonly accountId: string;
  readonly accountName: string;
  readonly accountEmail: string | null;
  readonly role: MemberRole;
  readonly createdAt: Date;
  readonly limits: MemberLimits;
}

/** An organisation a person belongs to, with their role in it. */
export interface OrganisationOf {
  readonly organisation: Account;
  readonly role: MemberRole;
}

export interface NewInvitation {
  readonly organisationId: string;
  /** SHA-256 of the link's secret; the secret itself is never stored. */
  readonly hash: Buffer;
  /** The name or e-mail it was sent to; only that person may accept it. */
  readonly invitee: string;
  readonly role: MemberRole;
  readonly createdBy: string;
  readonly expiresAt: Date;
}

export interface Invitation extends Omit<NewInvitation, 'hash'> {
  readonly id: string;
  readonly createdAt: Date;
  readonly acceptedBy: string | null;
  readonly acceptedAt: Date | null;
  readonly revokedAt: Date | null;
}

/** `last_owner`: refused, since the change would leave the organisation without an owner. */
export type MembershipChange = 'done' | 'not_found' | 'last_owner';

/** `used`: accepted, revoked or expired already (the link works once). */
export type InvitationAcceptance = { readonly ok: true; readonly membership: Membership } | { readonly ok: false; readonly reason: 'used' | 'member_already' };

export interface OrgStore {
  /** Makes the organisation and its first owner in one transaction; throws AccountExistsError on a taken name. */
  createOrganisation(input: { name: string; ownerId: string }): Promise<Account>;
  /** Whether the account is an organisation. */
  isOrganisation(accountId: string): Promise<boolean>;
  /** Every organisation, oldest first (the operator's list). */
  listOrganisations(): Promise<Account[]>;
  /** The organisations `accountId` belongs to, oldest membership first. */
  organisationsOf(accountId: string): Promise<OrganisationOf[]>;
  listMembers(organisationId: string): Promise<Membership[]>;
  findMember(organisationId: string, accountId: string): Promise<Membership | null>;
  /** Changes a member's role; refused when it would demote the last owner. */
  setMemberRole(organisationId: string, accountId: string, role: MemberRole): Promise<MembershipChange>;
  /**
   * Removes a member and revokes, in the same transaction, every key they made in the organisation:
   * the keys revision moves, so every instance drops those keys from its cache. Refused for the last owner.
   */
  removeMember(organisationId: string, accountId: string, at: Date): Promise<MembershipChange>;
  /** Sets the limits given (null clears one, an absent field is kept); false when no such member. */
  setMemberLimits(organisationId: string, accountId: string, limits: Partial<MemberLimits>): Promise<boolean>;

  createInvitation(input: NewInvitation): Promise<Invitation>;
  /** The organisation's invitations, newest first. */
  listInvitations(organisationId: string): Promise<Invitation[]>;
  findInvitation(hash: Buffer): Promise<Invitation | null>;
  /** False when no such invitation is open (unknown, accepted or revoked already). */
  revokeInvitation(organisationId: string, id: string, at: Date): Promise<boolean>;
  /**
   * Accepts an open invitation for `accountId`, once: marks it accepted and adds the membership in one
   * transaction. Refused when it was used, revoked or expired at `at`, or the account is a member already.
   */
  acceptInvitation(id: string, accountId: string, at: Date): Promise<InvitationAcceptance>;
}
