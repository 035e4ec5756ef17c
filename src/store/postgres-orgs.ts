/**
 * Organisations, memberships and invitations in the PostgreSQL store. The triggers on memberships
 * and api_keys tell every instance's key cache of a change; `changed` bumps this instance's at once.
 * A change that could take away the last owner locks the organisation's memberships first, so two
 * owners demoting each other at once are taken one after the other.
 */
import { randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { AccountExistsError, type Account } from './access-store';
import { ACCOUNT_COLUMNS } from './postgres-console';
import { inTransaction } from './postgres-tx';
import type { InvitationAcceptance, Invitation, MemberLimits, MemberRole, Membership, MembershipChange, NewInvitation, OrganisationOf, OrgStore } from './orgs';
import { INVITATION_COLUMNS, MEMBERSHIP_COLUMNS, memberLimitColumns, orgRowMappers, type InvitationRow, type MembershipRow } from './org-rows';
import { rowMappers, POSTGRES_CODEC, type AccountRow, type PostgresColumns } from './rows';

const { toAccount } = rowMappers(POSTGRES_CODEC);
const { toMembership, toInvitation } = orgRowMappers(POSTGRES_CODEC);

const UNIQUE_VIOLATION = '23505';

/** ACCOUNT_COLUMNS of the organisation `o` in a join. */
const ORG_ACCOUNT_COLUMNS = 'o.id, o.name, o.email, o.role, o.disabled, o.created_at, o.budget, o.session_budget::text AS session_budget';

function newId(prefix: 'acc_' | 'inv_'): string {
  return prefix + randomBytes(8).toString('hex');
}

/** The member's role with the organisation's memberships locked, and how many owners it has. */
async function lockedRoles(client: PoolClient, organisationId: string, accountId: string): Promise<{ role: MemberRole | null; owners: number }> {
  const { rows } = await client.query<{ account_id: string; role: MemberRole }>('SELECT account_id, role FROM memberships WHERE organisation_id = $1 FOR UPDATE', [organisationId]);
  return { role: rows.find((row) => row.account_id === accountId)?.role ?? null, owners: rows.filter((row) => row.role === 'owner').length };
}

export class PostgresOrgs implements OrgStore {
  constructor(
    private readonly pool: Pool,
    /** Called after every write authentication would see, for this instance's own key cache. */
    private readonly changed: () => void,
  ) {}

  async createOrganisation(input: { name: string; ownerId: string }): Promise<Account> {
    const id = newId('acc_');
    const now = new Date();
    try {
      await inTransaction(this.pool, async (client) => {
        await client.query(`INSERT INTO accounts (id, name, role, disabled, created_at, kind) VALUES ($1, $2, 'user', false, $3, 'organisation')`, [id, input.name, now]);
        await client.query(`INSERT INTO memberships (organisation_id, account_id, role, created_at) VALUES ($1, $2, 'owner', $3)`, [id, input.ownerId, now]);
      });
    } catch (error) {
      if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) throw new AccountExistsError(input.name);
      throw error;
    }
    this.changed();
    const { rows } = await this.pool.query<AccountRow<PostgresColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]);
    return toAccount(rows[0]);
  }

  async isOrganisation(accountId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(`SELECT 1 FROM accounts WHERE id = $1 AND kind = 'organisation'`, [accountId]);
    return rowCount !== 0;
  }

  async listOrganisations(): Promise<Account[]> {
    const { rows } = await this.pool.query<AccountRow<PostgresColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE kind = 'organisation' ORDER BY created_at, id`);
    return rows.map(toAccount);
  }

  async organisationsOf(accountId: string): Promise<OrganisationOf[]> {
    const { rows } = await this.pool.query<AccountRow<PostgresColumns> & { member_role: MemberRole }>(
      `SELECT ${ORG_ACCOUNT_COLUMNS}, m.role AS member_role FROM memberships m JOIN accounts o ON o.id = m.organisation_id
        WHERE m.account_id = $1 ORDER BY m.created_at, o.id`,
      [accountId],
    );
    return rows.map((row) => ({ organisation: toAccount(row), role: row.member_role }));
  }

  async listMembers(organisationId: string): Promise<Membership[]> {
    const { rows } = await this.pool.query<MembershipRow<PostgresColumns>>(
      `SELECT ${MEMBERSHIP_COLUMNS} FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.organisation_id = $1 ORDER BY m.created_at, a.id`,
      [organisationId],
    );
    return rows.map(toMembership);
  }

  async findMember(organisationId: string, accountId: string): Promise<Membership | null> {
    const { rows } = await this.pool.query<MembershipRow<PostgresColumns>>(
      `SELECT ${MEMBERSHIP_COLUMNS} FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.organisation_id = $1 AND m.account_id = $2`,
      [organisationId, accountId],
    );
    return rows.length === 0 ? null : toMembership(rows[0]);
  }

  async setMemberRole(organisationId: string, accountId: string, role: MemberRole): Promise<MembershipChange> {
    const result = await inTransaction(this.pool, async (client): Promise<MembershipChange> => {
      const found = await lockedRoles(client, organisationId, accountId);
      if (found.role === null) return 'not_found';
      if (role !== 'owner' && found.role === 'owner' && found.owners <= 1) return 'last_owner';
      await client.query('UPDATE memberships SET role = $1 WHERE organisation_id = $2 AND account_id = $3', [role, organisationId, accountId]);
      return 'done';
    });
    if (result === 'done') this.changed();
    return result;
  }

  async removeMember(organisationId: string, accountId: string, at: Date): Promise<MembershipChange> {
    const result = await inTransaction(this.pool, async (client): Promise<MembershipChange> => {
      const found = await lockedRoles(client, organisationId, accountId);
      if (found.role === null) return 'not_found';
      if (found.role === 'owner' && found.owners <= 1) return 'last_owner';
      await client.query('UPDATE api_keys SET revoked_at = $1 WHERE account_id = $2 AND member_account_id = $3 AND revoked_at IS NULL', [at, organisationId, accountId]);
      await client.query('DELETE FROM memberships WHERE organisation_id = $1 AND account_id = $2', [organisationId, accountId]);
      return 'done';
    });
    if (result === 'done') this.changed();
    return result;
  }

  async setMemberLimits(organisationId: string, accountId: string, limits: Partial<MemberLimits>): Promise<boolean> {
    const columns = memberLimitColumns(limits);
    const params: unknown[] = [organisationId, accountId, ...columns.map(([, text]) => text)];
    const set = columns.map(([column], index) => `${column} = $${index + 3}`);
    const { rowCount } = await this.pool.query(
      `UPDATE memberships SET ${set.length === 0 ? 'role = role' : set.join(', ')} WHERE organisation_id = $1 AND account_id = $2`,
      params,
    );
    if (rowCount !== 0) this.changed();
    return rowCount !== 0;
  }

  async createInvitation(input: NewInvitation): Promise<Invitation> {
    const row: InvitationRow<PostgresColumns> = {
      id: newId('inv_'),
      organisation_id: input.organisationId,
      invitee: input.invitee,
      role: input.role,
      created_by: input.createdBy,
      created_at: new Date(),
      expires_at: input.expiresAt,
      accepted_by: null,
      accepted_at: null,
      revoked_at: null,
    };
    await this.pool.query(
      'INSERT INTO invitations (id, organisation_id, hash, invitee, role, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [row.id, row.organisation_id, input.hash, row.invitee, row.role, row.created_by, row.created_at, row.expires_at],
    );
    return toInvitation(row);
  }

  async listInvitations(organisationId: string): Promise<Invitation[]> {
    const { rows } = await this.pool.query<InvitationRow<PostgresColumns>>(
      `SELECT ${INVITATION_COLUMNS} FROM invitations WHERE organisation_id = $1 ORDER BY created_at DESC, id DESC`,
      [organisationId],
    );
    return rows.map(toInvitation);
  }

  async findInvitation(hash: Buffer): Promise<Invitation | null> {
    const { rows } = await this.pool.query<InvitationRow<PostgresColumns>>(`SELECT ${INVITATION_COLUMNS} FROM invitations WHERE hash = $1`, [hash]);
    return rows.length === 0 ? null : toInvitation(rows[0]);
  }

  async revokeInvitation(organisationId: string, id: string, at: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'UPDATE invitations SET revoked_at = $1 WHERE organisation_id = $2 AND id = $3 AND accepted_at IS NULL AND revoked_at IS NULL',
      [at, organisationId, id],
    );
    return rowCount !== 0;
  }

  async acceptInvitation(id: string, accountId: string, at: Date): Promise<InvitationAcceptance> {
    const result = await inTransaction(
      this.pool,
      async (client): Promise<InvitationAcceptance> => {
        const { rows } = await client.query<{ organisation_id: string; role: MemberRole }>(
          `UPDATE invitations SET accepted_by = $1, accepted_at = $2 WHERE id = $3 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $2
           RETURNING organisation_id, role`,
          [accountId, at, id],
        );
        if (rows.length === 0) return { ok: false, reason: 'used' };
        const inserted = await client.query(
          'INSERT INTO memberships (organisation_id, account_id, role, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
          [rows[0].organisation_id, accountId, rows[0].role, at],
        );
        if (inserted.rowCount === 0) return { ok: false, reason: 'member_already' };
        const member = await client.query<MembershipRow<PostgresColumns>>(
          `SELECT ${MEMBERSHIP_COLUMNS} FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.organisation_id = $1 AND m.account_id = $2`,
          [rows[0].organisation_id, accountId],
        );
        return { ok: true, membership: toMembership(member.rows[0]) };
      },
      // A member already keeps the invitation open: rolled back, it can still be revoked or left to expire.
      (outcome) => outcome.ok,
    );
    if (result.ok) this.changed();
    return result;
  }
}
