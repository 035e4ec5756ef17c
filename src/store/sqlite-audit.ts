/** The audit log in the SQLite store: append and list. The store delegates to it. */
import { randomBytes } from 'node:crypto';
import type { SqliteDatabase, SqliteStatement } from './sqlite-driver';
import { toAuditRecord, type AuditFilter, type AuditRecord, type AuditRow, type NewAuditEntry } from './audit';
import { auditJson, auditWhere } from './audit-query';

const COLUMNS = 'id, at, actor, surface, action, target, account_id, before, after, request_id';

export class SqliteAudit {
  private readonly insert: SqliteStatement<[Record<string, unknown>]>;

  constructor(private readonly db: SqliteDatabase) {
    this.insert = db.prepare(
      `INSERT INTO audit (${COLUMNS}) VALUES (@id, @at, @actor, @surface, @action, @target, @account_id, @before, @after, @request_id)`,
    );
  }

  append(entry: NewAuditEntry): AuditRecord {
    const record: AuditRecord = { ...entry, id: `aud_${randomBytes(8).toString('hex')}`, at: new Date() };
    this.insert.run({
      id: record.id,
      at: record.at.getTime(),
      actor: entry.actor,
      surface: entry.surface,
      action: entry.action,
      target: entry.target,
      account_id: entry.accountId,
      before: auditJson(entry.before),
      after: auditJson(entry.after),
      request_id: entry.requestId,
    });
    return record;
  }

  list(filter: AuditFilter): AuditRecord[] {
    const where = auditWhere(filter, (date) => date.getTime(), () => '?');
    const rows = this.db
      .prepare<unknown[], AuditRow<number>>(`SELECT ${COLUMNS} FROM audit ${where.sql} ORDER BY at DESC, rowid DESC LIMIT ?`)
      .all(...where.params, where.limit);
    return rows.map((row) => toAuditRecord(row, (ms) => new Date(ms)));
  }
}
