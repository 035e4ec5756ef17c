/**
 * `tollgate org create|list|members|invite|role|remove`: organisations from the operator's shell. The
 * store keeps the rules it can keep alone (an owner always stays); the CLI acts as the operator, so
 * it may do what an owner may.
 */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { EXIT_OK, withStore } from './context';
import { auditFromCli } from './audit';
import { requireAccount } from './lookup';
import { formatTable, formatTime } from './table';
import { printJson } from './json';
import { hashSecret, newInvitationSecret } from '../admin/secrets';
import { invitationMade, memberRemoved, memberRoleChanged, organisationCreated } from '../audit/org-states';
import { MEMBER_ROLES, type MemberRole, type Membership } from '../store/orgs';
import type { Store } from '../store/store';

const DAY_MS = 86_400_000;
const LAST_OWNER = 'an organisation keeps at least one owner: make another member an owner first';

function roleOf(value: string | undefined): MemberRole {
  if (value === undefined || !(MEMBER_ROLES as readonly string[]).includes(value)) throw new UsageError(`the role is one of ${MEMBER_ROLES.join(', ')}`);
  return value as MemberRole;
}

async function requireOrganisation(store: Store, name: string) {
  const organisation = await requireAccount(store, name);
  if (!(await store.orgs.isOrganisation(organisation.id))) throw new Error(`"${name}" is an account, not an organisation`);
  return organisation;
}

async function requireMember(store: Store, organisationId: string, name: string): Promise<Membership> {
  const account = await requireAccount(store, name);
  const member = await store.orgs.findMember(organisationId, account.id);
  if (member === null) throw new Error(`"${name}" is not a member`);
  return member;
}

export async function orgCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: { config: { type: 'string' }, owner: { type: 'string' }, role: { type: 'string' }, days: { type: 'string' }, json: { type: 'boolean' } },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      const usage = 'org create NAME --owner ACCOUNT';
      expectPositionals(rest, 1, usage);
      if (values.owner === undefined) throw new UsageError(`--owner is required; usage: tollgate ${usage}`);
      await withStore(values.config, io, async (store) => {
        const owner = await requireAccount(store, values.owner!);
        const organisation = await store.orgs.createOrganisation({ name: rest[0], ownerId: owner.id });
        await auditFromCli(store, io, organisationCreated(organisation, owner));
        io.out(`organisation ${organisation.name} (${organisation.id}) created; owner ${owner.name}`);
      });
      return EXIT_OK;
    }
    case 'list': {
      expectPositionals(rest, 0, 'org list [--json]');
      await withStore(values.config, io, async (store) => {
        const organisations = await store.orgs.listOrganisations();
        if (values.json === true) return printJson(organisations.map((organisation) => ({ id: organisation.id, name: organisation.name, created_at: organisation.createdAt.toISOString() })), io.out);
        if (organisations.length === 0) return io.out('no organisations');
        for (const line of formatTable([['ID', 'NAME', 'CREATED'], ...organisations.map((organisation) => [organisation.id, organisation.name, formatTime(organisation.createdAt)])])) io.out(line);
      });
      return EXIT_OK;
    }
    case 'members': {
      expectPositionals(rest, 1, 'org members ORG [--json]');
      await withStore(values.config, io, async (store) => {
        const organisation = await requireOrganisation(store, rest[0]);
        const members = await store.orgs.listMembers(organisation.id);
        if (values.json === true) return printJson(members.map((member) => ({ account_id: member.accountId, name: member.accountName, role: member.role, created_at: member.createdAt.toISOString() })), io.out);
        for (const line of formatTable([['ACCOUNT', 'NAME', 'ROLE', 'SINCE'], ...members.map((member) => [member.accountId, member.accountName, member.role, formatTime(member.createdAt)])])) io.out(line);
      });
      return EXIT_OK;
    }
    case 'invite': {
      const usage = 'org invite ORG NAME_OR_EMAIL [--role ROLE] [--days N]';
      expectPositionals(rest, 2, usage);
      const role = values.role === undefined ? 'member' : roleOf(values.role);
      const days = values.days === undefined ? 7 : Number(values.days);
      if (!Number.isSafeInteger(days) || days < 1 || days > 30) throw new UsageError('--days is a whole number from 1 to 30');
      await withStore(values.config, io, async (store) => {
        const organisation = await requireOrganisation(store, rest[0]);
        const owner = (await store.orgs.listMembers(organisation.id)).find((member) => member.role === 'owner');
        if (owner === undefined) throw new Error(`${organisation.name} has no owner`);
        const secret = newInvitationSecret();
        const invitation = await store.orgs.createInvitation({
          organisationId: organisation.id,
          hash: hashSecret(secret),
          invitee: rest[1].trim().toLowerCase(),
          role,
          createdBy: owner.accountId,
          expiresAt: new Date(Date.now() + days * DAY_MS),
        });
        await auditFromCli(store, io, invitationMade(invitation));
        io.out(`invitation ${invitation.id} for ${invitation.invitee} as ${role}, open until ${formatTime(invitation.expiresAt)}; shown only this once:`);
        io.out(`/console/join#${secret}`);
      });
      return EXIT_OK;
    }
    case 'role': {
      expectPositionals(rest, 3, 'org role ORG ACCOUNT ROLE');
      const role = roleOf(rest[2]);
      await withStore(values.config, io, async (store) => {
        const organisation = await requireOrganisation(store, rest[0]);
        const member = await requireMember(store, organisation.id, rest[1]);
        const changed = await store.orgs.setMemberRole(organisation.id, member.accountId, role);
        if (changed === 'last_owner') throw new Error(LAST_OWNER);
        if (changed === 'not_found') throw new Error(`"${rest[1]}" is not a member`);
        await auditFromCli(store, io, memberRoleChanged(member, role));
        io.out(`${member.accountName} is now ${role} of ${organisation.name}`);
      });
      return EXIT_OK;
    }
    case 'remove': {
      expectPositionals(rest, 2, 'org remove ORG ACCOUNT');
      await withStore(values.config, io, async (store) => {
        const organisation = await requireOrganisation(store, rest[0]);
        const member = await requireMember(store, organisation.id, rest[1]);
        const removed = await store.orgs.removeMember(organisation.id, member.accountId, new Date());
        if (removed === 'last_owner') throw new Error(LAST_OWNER);
        if (removed === 'not_found') throw new Error(`"${rest[1]}" is not a member`);
        await auditFromCli(store, io, memberRemoved(member));
        io.out(`${member.accountName} removed from ${organisation.name}; their keys in it are revoked`);
      });
      return EXIT_OK;
    }
    default:
      throw new UsageError('usage: tollgate org create|list|members|invite|role|remove …; run "tollgate help org"');
  }
}
