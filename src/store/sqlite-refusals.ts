/** Refused requests in the SQLite store (see refusals.ts). */
import type { SqliteDatabase } from './sqlite-driver';
import {
  REFUSAL_COLUMNS,
  refusalSummarySql,
  refusalUpsert,
  refusalValues,
  refusalWhere,
  toRefusal,
  toRefusalSummary,
  type RefusalCursor,
  type RefusalFilter,
  type RefusalRecord,
  type RefusalRow,
  type RefusalStore,
  type RefusalSummaryRow,
  type RefusalSummarySqlRow,
} from './refusals';

const millis = (date: Date) => date.getTime();
const fromMillis = (ms: number) => new Date(ms);

export class SqliteRefusals implements RefusalStore {
  constructor(private readonly db: SqliteDatabase) {}

  async record(rows: readonly RefusalRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const upsert = this.db.prepare<unknown[]>(refusalUpsert(REFUSAL_COLUMNS.split(', ').map(() => '?')));
    this.db.transaction(() => {
      for (const row of rows) upsert.run(...refusalValues(row, millis));
    }).immediate();
  }

  async list(filter: RefusalFilter & { readonly limit: number; readonly before?: RefusalCursor }): Promise<RefusalRecord[]> {
    const where = refusalWhere(filter, millis, () => '?');
    return this.db
      .prepare<unknown[], RefusalRow<number>>(`SELECT ${REFUSAL_COLUMNS} FROM refusals ${where.sql} ORDER BY created_at DESC, id DESC LIMIT ?`)
      .all(...where.params, filter.limit)
      .map((row) => toRefusal(row, fromMillis));
  }

  async summary(filter: RefusalFilter): Promise<RefusalSummaryRow[]> {
    const where = refusalWhere(filter, millis, () => '?');
    return this.db
      .prepare<unknown[], RefusalSummarySqlRow<number>>(refusalSummarySql(where.sql))
      .all(...where.params)
      .map((row) => toRefusalSummary(row, fromMillis));
  }
}
