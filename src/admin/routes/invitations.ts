/**
 * Invitations to an organisation: an owner or admin invites a person by name or e-mail; the answer
 * carries a one-time link (its secret shown once, only its SHA-256 kept), which that person accepts
 * once signed in (or right after signing up). Open for `expires_in_days` (default 7), revocable.
 */
import type Router from '@koa/router';
import { ApiError, invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { integerInRange, requiredString } from '../fields';
import { readJsonObject } from '../json-body';
import { callerWith, requireRoleChange } from '../org-access';
import { invitationView, memberView } from '../org-views';
import { hashSecret, INVITATION_PREFIX, newInvitationSecret, plausibleSecret } from '../secrets';
import { audit } from '../audit';
import { invitationMade, invitationRevoked, memberJoined } from '../../audit/org-states';
import { memberRole } from './orgs';

const DEFAULT_DAYS = 7;
const MAX_DAYS = 30;
const DAY_MS = 86_400_000;
/** Open invitations one organisation may have at once. */
const MAX_OPEN = 200;

/** Whether `invitee` (a name or an e-mail, as invited) names this account. */
function names(invitee: string, account: { name: string; email: string | null }): boolean {
  const asked = invitee.toLowerCase();
  return asked === account.name.toLowerCase() || (account.email !== null && asked === account.email.toLowerCase());
}

export function invitationRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/orgs/:id/invitations', signedIn(deps), async (ctx) => {
    const actor = await callerWith(deps, ctx, 'manage_members');
    const now = Date.now();
    ctx.body = { invitations: (await deps.store.orgs.listInvitations(actor.organisationId)).map((invitation) => invitationView(invitation, now)) };
  });

  router.post('/orgs/:id/invitations', signedIn(deps), async (ctx) => {
    const actor = await callerWith(deps, ctx, 'manage_members');
    const body = await readJsonObject(ctx);
    const invitee = requiredString(body, 'invitee', 'The name or e-mail of the person invited', 254).trim().toLowerCase();
    if (invitee === '' || /[\u0000-\u001f\u007f]/.test(invitee)) throw invalid('invitee', 'Give the name or e-mail of the person invited.');
    const role = body.role === undefined ? 'member' : memberRole(body);
    requireRoleChange(actor, null, role);
    const days = body.expires_in_days === undefined ? DEFAULT_DAYS : integerInRange(body, 'expires_in_days', 'The days an invitation stays open', 1, MAX_DAYS);
    const now = Date.now();
    const open = (await deps.store.orgs.listInvitations(actor.organisationId)).filter((invitation) => invitationView(invitation, now).status === 'open');
    if (open.length >= MAX_OPEN) throw new ApiError('conflict', `An organisation has at most ${MAX_OPEN} open invitations; revoke some first.`);
    const secret = newInvitationSecret();
    const invitation = await deps.store.orgs.createInvitation({
      organisationId: actor.organisationId,
      hash: hashSecret(secret),
      invitee,
      role,
      createdBy: actor.accountId,
      expiresAt: new Date(now + days * DAY_MS),
    });
    await audit(deps, ctx, invitationMade(invitation));
    ctx.status = 201;
    // The secret travels in the fragment, which browsers never send: it stays out of access logs.
    ctx.body = { invitation: invitationView(invitation, now), secret, link: `/console/join#${secret}` };
  });

  router.delete('/orgs/:id/invitations/:invitationId', signedIn(deps), async (ctx) => {
    const actor = await callerWith(deps, ctx, 'manage_members');
    const id = (ctx.params as Readonly<Record<string, string>>).invitationId;
    const invitation = (await deps.store.orgs.listInvitations(actor.organisationId)).find((candidate) => candidate.id === id);
    if (invitation === undefined) throw notFound('This invitation');
    if (!(await deps.store.orgs.revokeInvitation(actor.organisationId, id, new Date()))) throw new ApiError('gone', 'This invitation was accepted or revoked already.');
    await audit(deps, ctx, invitationRevoked(invitation));
    const after = (await deps.store.orgs.listInvitations(actor.organisationId)).find((candidate) => candidate.id === id)!;
    ctx.body = { invitation: invitationView(after) };
  });

  // The secret comes in the body, not the path, so it is never in a URL the server logs.
  router.post('/invitations/accept', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const secret = requiredString(body, 'secret', 'The invitation', 200);
    const known = secret.startsWith(INVITATION_PREFIX) && plausibleSecret(secret.slice(INVITATION_PREFIX.length)) ? await deps.store.orgs.findInvitation(hashSecret(secret)) : null;
    // Someone else's invitation reads as unknown: the link proves nothing to anyone but its invitee.
    if (known === null || !names(known.invitee, account)) throw notFound('This invitation');
    const now = new Date();
    if (known.acceptedAt !== null || known.revokedAt !== null || known.expiresAt.getTime() <= now.getTime()) {
      throw new ApiError('gone', 'This invitation was used, revoked or has expired; ask for a new one.');
    }
    const accepted = await deps.store.orgs.acceptInvitation(known.id, account.id, now);
    if (!accepted.ok && accepted.reason === 'member_already') throw new ApiError('conflict', 'You are a member of this organisation already.');
    if (!accepted.ok) throw new ApiError('gone', 'This invitation was used, revoked or has expired; ask for a new one.');
    await audit(deps, ctx, memberJoined(accepted.membership, known.id));
    ctx.body = { member: memberView(accepted.membership) };
  });
}
