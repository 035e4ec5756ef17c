/**
 * Organisations in the simulator: one account of a seed may be an organisation with two members, each
 * of its keys a member's (both keys one member's, or one each), and each member with a budget of their
 * own or none. Its requests then spend the organisation's balance and count in the member's budget,
 * which every book must check and count as the reference model does. Drawn from the seed apart from
 * the rest of the setup, so a seed's other accounts and keys are what they were before organisations.
 */
import { randomBytes } from 'node:crypto';
import { memberBudgetId } from '../../src/store/budget-owner';
import type { Account, ApiKeyRecord, Budget, Store } from '../../src/store/store';
import { ACCOUNTS, KEYS_PER_ACCOUNT, Random } from './ops';

const TIMEZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo'];

/** The organisation of a seed: which account it is, its members' budgets, and whose each of its keys is. */
export interface OrgSpec {
  readonly account: number;
  readonly members: readonly { readonly budget: Budget | null }[];
  /** Per key of the organisation (in the order of the account's keys): the index of its member. */
  readonly keyMembers: readonly number[];
}

/** Three seeds in four have an organisation. */
export function orgSetupOf(seed: number): OrgSpec | null {
  const r = new Random(seed ^ 0x0a9e);
  if (!r.chance(0.75)) return null;
  const account = r.int(0, ACCOUNTS - 1);
  const members = [0, 1].map(() => ({
    budget: r.chance(0.7) ? { amount: r.big(2_000_000n, 15_000_000n), period: r.pick(['day', 'week', 'month'] as const), timezone: r.pick(TIMEZONES) } : null,
  }));
  return { account, members, keyMembers: Array.from({ length: KEYS_PER_ACCOUNT }, () => r.int(0, 1)) };
}

/** The organisation as made in a store: the account, and its members' account ids in the spec's order. */
export interface MadeOrg {
  readonly account: Account;
  readonly memberIds: readonly string[];
}

/** Makes the organisation: its first member owns it, the second joins by an accepted invitation; then their budgets. */
export async function makeOrganisation(store: Store, name: string, spec: OrgSpec): Promise<MadeOrg> {
  const people = await Promise.all(spec.members.map((_member, index) => store.createAccount({ name: `${name}-m${index}`, role: 'user' })));
  const account = await store.orgs.createOrganisation({ name, ownerId: people[0].id });
  for (const person of people.slice(1)) {
    const invitation = await store.orgs.createInvitation({ organisationId: account.id, hash: randomBytes(32), invitee: person.name, role: 'member', createdBy: people[0].id, expiresAt: new Date(Date.now() + 3_600_000) });
    const accepted = await store.orgs.acceptInvitation(invitation.id, person.id, new Date());
    if (!accepted.ok) throw new Error(`the simulator's invitation was refused: ${accepted.reason}`);
  }
  for (const [index, member] of spec.members.entries()) if (member.budget !== null) await store.orgs.setMemberLimits(account.id, people[index].id, { budget: member.budget });
  return { account, memberIds: people.map((person) => person.id) };
}

/** The member whose key `keyIndex` (of the organisation's keys) is; undefined when the account is no organisation. */
export function keyMember(spec: OrgSpec | null, made: MadeOrg | null, account: number, keyIndex: number): string | undefined {
  if (spec === null || made === null || spec.account !== account) return undefined;
  return made.memberIds[spec.keyMembers[keyIndex]];
}

/** The member's budget for a key of the organisation, as the key's identity carries it; null for none. */
export function memberBudgetOf(spec: OrgSpec | null, made: MadeOrg | null, key: ApiKeyRecord): Budget | null {
  if (spec === null || made === null || key.memberAccountId == null) return null;
  return spec.members[made.memberIds.indexOf(key.memberAccountId)]?.budget ?? null;
}

/** The member a key spends for, as the reference model names them (the member budget's id); null for an account's own key. */
export function modelMember(key: ApiKeyRecord): string | null {
  return key.memberAccountId == null ? null : memberBudgetId(key.accountId, key.memberAccountId);
}
