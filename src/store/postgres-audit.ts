/** The audit log in the PostgreSQL store: append and list. The store delegates to it. */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { toAuditRecord, type AuditFilter, type AuditRecord, type AuditRow, type NewAuditEntry } from './audit';
import { auditJson, auditWhere } from './audit-query';

const COLUMNS = 'id, at, actor, surface, action, target, account_id, before, after, request_id';

export async function appendAudit(pool: Pool, entry: NewAuditEntry): Promise<AuditRecord> {
  const record: AuditRecord = { ...entry, id: `aud_${randomBytes(8).toString('hex')}`, at: new Date() };
  await pool.query(`INSERT INTO audit (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, [
    record.id,
    record.at,
    entry.actor,
    entry.surface,
    entry.action,
    entry.target,
    entry.accountId,
    auditJson(entry.before),
    auditJson(entry.after),
    entry.requestId,
  ]);
  return record;
}

export async function listAudit(pool: Pool, filter: AuditFilter): Promise<AuditRecord[]> {
  const where = auditWhere(filter, (date) => date, (index) => `$${index}`);
  const { rows } = await pool.query<AuditRow<Date>>(
    `SELECT ${COLUMNS} FROM audit ${where.sql} ORDER BY at DESC, seq DESC LIMIT $${where.params.length + 1}`,
    [...where.params, where.limit],
  );
  return rows.map((row) => toAuditRecord(row, (date) => date));
}
