/**
 * Organisations, memberships and invitations in the SQLite store. Every write authentication would
 * see (a membership, a member's limits, keys revoked with a member) calls `changed`, as SqliteKeys does.
 */
import { randomBytes } from 'node:crypto';
import { sqliteErrorCode, type SqliteDatabase } from './sqlite-driver';
import { ACCOUNT_COLUMNS } from './sqlite-console';
import { AccountExistsError, type Account } from './access-store';
import type { InvitationAcceptance, Invitation, MemberLimits, MemberRole, Membership, MembershipChange, NewInvitation, OrganisationOf, OrgStore } from './orgs';
import { INVITATION_COLUMNS, MEMBERSHIP_COLUMNS, memberLimitColumns, orgRowMappers, type InvitationRow, type MembershipRow } from './org-rows';
import { rowMappers, SQLITE_CODEC, type AccountRow, type SqliteColumns } from './rows';

const { toAccount } = rowMappers(SQLITE_CODEC);
const { toMembership, toInvitation } = orgRowMappers(SQLITE_CODEC);

/** ACCOUNT_COLUMNS of the organisation `o` in a join. */
const ORG_ACCOUNT_COLUMNS = 'o.id, o.name, o.email, o.role, o.disabled, o.created_at, o.budget, CAST(o.session_budget AS TEXT) AS session_budget';

function prepareStatements(db: SqliteDatabase) {
  return {
    insertOrganisation: db.prepare<[string, string, number]>(`INSERT INTO accounts (id, name, role, disabled, created_at, kind) VALUES (?, ?, 'user', 0, ?, 'organisation')`),
    insertMember: db.prepare<[string, string, MemberRole, number]>('INSERT INTO memberships (organisation_id, account_id, role, created_at) VALUES (?, ?, ?, ?)'),
    accountRow: db.prepare<[string], AccountRow<SqliteColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
    isOrganisation: db.prepare<[string], number>(`SELECT 1 FROM accounts WHERE id = ? AND kind = 'organisation'`).pluck(),
    organisations: db.prepare<[], AccountRow<SqliteColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE kind = 'organisation' ORDER BY created_at, rowid`),
    organisationsOf: db.prepare<[string], AccountRow<SqliteColumns> & { member_role: MemberRole }>(
      `SELECT ${ORG_ACCOUNT_COLUMNS}, m.role AS member_role FROM memberships m JOIN accounts o ON o.id = m.organisation_id
        WHERE m.account_id = ? ORDER BY m.created_at, m.rowid`,
    ),
    members: db.prepare<[string], MembershipRow<SqliteColumns>>(
      `SELECT ${MEMBERSHIP_COLUMNS} FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.organisation_id = ? ORDER BY m.created_at, m.rowid`,
    ),
    member: db.prepare<[string, string], MembershipRow<SqliteColumns>>(
      `SELECT ${MEMBERSHIP_COLUMNS} FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.organisation_id = ? AND m.account_id = ?`,
    ),
    role: db.prepare<[string, string], MemberRole>('SELECT role FROM memberships WHERE organisation_id = ? AND account_id = ?').pluck(),
    owners: db.prepare<[string], number>(`SELECT count(*) FROM memberships WHERE organisation_id = ? AND role = 'owner'`).pluck(),
    setRole: db.prepare<[MemberRole, string, string]>('UPDATE memberships SET role = ? WHERE organisation_id = ? AND account_id = ?'),
    deleteMember: db.prepare<[string, string]>('DELETE FROM memberships WHERE organisation_id = ? AND account_id = ?'),
    revokeMemberKeys: db.prepare<[number, string, string]>(
      'UPDATE api_keys SET revoked_at = ? WHERE account_id = ? AND member_account_id = ? AND revoked_at IS NULL',
    ),
    insertInvitation: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO invitations (id, organisation_id, hash, invitee, role, created_by, created_at, expires_at)
       VALUES (@id, @organisation_id, @hash, @invitee, @role, @created_by, @created_at, @expires_at)`,
    ),
    invitations: db.prepare<[string], InvitationRow<SqliteColumns>>(`SELECT ${INVITATION_COLUMNS} FROM invitations WHERE organisation_id = ? ORDER BY created_at DESC, rowid DESC`),
    invitationByHash: db.prepare<[Buffer], InvitationRow<SqliteColumns>>(`SELECT ${INVITATION_COLUMNS} FROM invitations WHERE hash = ?`),
    revokeInvitation: db.prepare<[number, string, string]>(
      'UPDATE invitations SET revoked_at = ? WHERE organisation_id = ? AND id = ? AND accepted_at IS NULL AND revoked_at IS NULL',
    ),
    invitationOrganisation: db.prepare<[string], string>('SELECT organisation_id FROM invitations WHERE id = ?').pluck(),
    takeInvitation: db.prepare<[string, number, string, number], { organisation_id: string; role: MemberRole }>(
      `UPDATE invitations SET accepted_by = ?, accepted_at = ? WHERE id = ? AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?
       RETURNING organisation_id, role`,
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

function newId(prefix: 'acc_' | 'inv_'): string {
  return prefix + randomBytes(8).toString('hex');
}

export class SqliteOrgs implements OrgStore {
  private statements: Statements | null = null;

  constructor(
    private readonly db: SqliteDatabase,
    /** Called after every write authentication would see. */
    private readonly changed: () => void,
  ) {}

  /** Prepared on first use: the tables exist only after `migrate()`. */
  private get sql(): Statements {
    this.statements ??= prepareStatements(this.db);
    return this.statements;
  }

  async createOrganisation(input: { name: string; ownerId: string }): Promise<Account> {
    const id = newId('acc_');
    const now = Date.now();
    try {
      this.db.transaction(() => {
        this.sql.insertOrganisation.run(id, input.name, now);
        this.sql.insertMember.run(id, input.ownerId, 'owner', now);
      }).immediate();
    } catch (error) {
      if (sqliteErrorCode(error) === 'SQLITE_CONSTRAINT_UNIQUE') throw new AccountExistsError(input.name);
      throw error;
    }
    this.changed();
    return toAccount(this.sql.accountRow.get(id)!);
  }

  async isOrganisation(accountId: string): Promise<boolean> {
    return this.sql.isOrganisation.get(accountId) !== undefined;
  }

  async listOrganisations(): Promise<Account[]> {
    return this.sql.organisations.all().map(toAccount);
  }

  async organisationsOf(accountId: string): Promise<OrganisationOf[]> {
    return this.sql.organisationsOf.all(accountId).map((row) => ({ organisation: toAccount(row), role: row.member_role }));
  }

  async listMembers(organisationId: string): Promise<Membership[]> {
    return this.sql.members.all(organisationId).map(toMembership);
  }

  async findMember(organisationId: string, accountId: string): Promise<Membership | null> {
    const row = this.sql.member.get(organisationId, accountId);
    return row === undefined ? null : toMembership(row);
  }

  /** Whether taking `accountId` out of the owners leaves the organisation none; read inside the write lock. */
  private lastOwner(organisationId: string, accountId: string): boolean {
    return this.sql.role.get(organisationId, accountId) === 'owner' && (this.sql.owners.get(organisationId) ?? 0) <= 1;
  }

  async setMemberRole(organisationId: string, accountId: string, role: MemberRole): Promise<MembershipChange> {
    const result = this.db.transaction((): MembershipChange => {
      if (this.sql.role.get(organisationId, accountId) === undefined) return 'not_found';
      if (role !== 'owner' && this.lastOwner(organisationId, accountId)) return 'last_owner';
      this.sql.setRole.run(role, organisationId, accountId);
      return 'done';
    }).immediate();
    if (result === 'done') this.changed();
    return result;
  }

  async removeMember(organisationId: string, accountId: string, at: Date): Promise<MembershipChange> {
    const result = this.db.transaction((): MembershipChange => {
      if (this.sql.role.get(organisationId, accountId) === undefined) return 'not_found';
      if (this.lastOwner(organisationId, accountId)) return 'last_owner';
      this.sql.revokeMemberKeys.run(at.getTime(), organisationId, accountId);
      this.sql.deleteMember.run(organisationId, accountId);
      return 'done';
    }).immediate();
    if (result === 'done') this.changed();
    return result;
  }

  async setMemberLimits(organisationId: string, accountId: string, limits: Partial<MemberLimits>): Promise<boolean> {
    const found = this.db.transaction(() => {
      if (this.sql.role.get(organisationId, accountId) === undefined) return false;
      for (const [column, text] of memberLimitColumns(limits)) {
        this.db.prepare<[string | null, string, string]>(`UPDATE memberships SET ${column} = ? WHERE organisation_id = ? AND account_id = ?`).run(text, organisationId, accountId);
      }
      return true;
    }).immediate();
    if (found) this.changed();
    return found;
  }

  async createInvitation(input: NewInvitation): Promise<Invitation> {
    const row = {
      id: newId('inv_'),
      organisation_id: input.organisationId,
      invitee: input.invitee,
      role: input.role,
      created_by: input.createdBy,
      created_at: Date.now(),
      expires_at: input.expiresAt.getTime(),
      accepted_by: null,
      accepted_at: null,
      revoked_at: null,
    } satisfies InvitationRow<SqliteColumns>;
    this.sql.insertInvitation.run({ ...row, hash: input.hash });
    return toInvitation(row);
  }

  async listInvitations(organisationId: string): Promise<Invitation[]> {
    return this.sql.invitations.all(organisationId).map(toInvitation);
  }

  async findInvitation(hash: Buffer): Promise<Invitation | null> {
    const row = this.sql.invitationByHash.get(hash);
    return row === undefined ? null : toInvitation(row);
  }

  async revokeInvitation(organisationId: string, id: string, at: Date): Promise<boolean> {
    return this.sql.revokeInvitation.run(at.getTime(), organisationId, id).changes > 0;
  }

  async acceptInvitation(id: string, accountId: string, at: Date): Promise<InvitationAcceptance> {
    const result = this.db.transaction((): InvitationAcceptance => {
      const organisationId = this.sql.invitationOrganisation.get(id);
      if (organisationId !== undefined && this.sql.role.get(organisationId, accountId) !== undefined) return { ok: false, reason: 'member_already' };
      const row = this.sql.takeInvitation.get(accountId, at.getTime(), id, at.getTime());
      if (row === undefined) return { ok: false, reason: 'used' };
      this.sql.insertMember.run(row.organisation_id, accountId, row.role, at.getTime());
      return { ok: true, membership: toMembership(this.sql.member.get(row.organisation_id, accountId)!) };
    }).immediate();
    if (result.ok) this.changed();
    return result;
  }
}
