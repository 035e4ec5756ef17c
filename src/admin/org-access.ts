/**
 * Who may do what in an organisation: the one place the roles are read. An owner may do everything;
 * an admin manages members, keys and limits (never an owner's role); billing moves money and reads
 * statements; a member has their own keys and usage. What a caller may not see answers 404, as for
 * any id that is not theirs, so an id reveals nothing about an organisation one is not in.
 */
import type { Membership, MemberRole } from '../store/orgs';
import { ApiError, notFound } from './api-error';
import { callerOf, type AdminDeps, type ApiContext } from './context';
import { single } from './routes/query';

/** What a role allows beyond a member's own keys and usage. */
export type OrgPower = 'manage_members' | 'read_all_usage' | 'move_money' | 'read_statements';

const POWERS: Readonly<Record<MemberRole, readonly OrgPower[]>> = {
  owner: ['manage_members', 'read_all_usage', 'move_money', 'read_statements'],
  admin: ['manage_members', 'read_all_usage'],
  billing: ['move_money', 'read_statements'],
  member: [],
};

export function may(role: MemberRole, power: OrgPower): boolean {
  return POWERS[role].includes(power);
}

/** The caller's membership of the organisation in the path (`:id`); 404 when they are not a member. */
export async function callerMembership(deps: AdminDeps, ctx: ApiContext): Promise<Membership> {
  const organisationId = (ctx.params as Readonly<Record<string, string>>).id;
  const membership = await deps.store.orgs.findMember(organisationId, callerOf(ctx).account.id);
  if (membership === null) throw notFound('This organisation');
  return membership;
}

/** The caller's membership, when its role has `power`; 404 otherwise (what they may not see). */
export async function callerWith(deps: AdminDeps, ctx: ApiContext, power: OrgPower): Promise<Membership> {
  const membership = await callerMembership(deps, ctx);
  if (!may(membership.role, power)) throw notFound('This organisation');
  return membership;
}

/**
 * Whose usage a read covers (`member_id`): the caller's own unless their role reads everyone's, then
 * the member asked for or (undefined) every member. Another member's, asked by one who may not, is 404.
 */
export function memberScope(ctx: ApiContext, membership: Membership): string | undefined {
  const asked = single(ctx.query.member_id, 'member_id');
  if (asked === undefined) return may(membership.role, 'read_all_usage') ? undefined : membership.accountId;
  if (asked === membership.accountId || may(membership.role, 'read_all_usage')) return asked;
  throw notFound('This member');
}

/**
 * Whether `actor` may give `target` (null: a new member) the role `role`: an owner any; an admin
 * only below owner, and never to or from an owner. Refused with 403 (they see the member, so a 404
 * would be a lie).
 */
export function requireRoleChange(actor: Membership, target: Membership | null, role: MemberRole | null): void {
  if (actor.role === 'owner') return;
  if (target?.role === 'owner' || role === 'owner') throw new ApiError('forbidden', "Only an owner may change an owner's membership or make an owner.");
}

/** "removing the last owner" in words the console shows. */
export const LAST_OWNER_MESSAGE = 'An organisation keeps at least one owner: make another member an owner first.';
