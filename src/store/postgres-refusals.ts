/** Refused requests in the PostgreSQL store (see refusals.ts). */
import type { Pool } from 'pg';
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
import { inTransaction } from './postgres-tx';

const same = (date: Date) => date;
const UPSERT = refusalUpsert(REFUSAL_COLUMNS.split(', ').map((_, index) => `$${index + 1}`));

export class PostgresRefusals implements RefusalStore {
  constructor(private readonly pool: Pool) {}

  async record(rows: readonly RefusalRecord[]): Promise<void> {
    if (rows.length === 0) return;
    // inTransaction listens for the checked-out client's errors: a backend terminated under it must
    // fail this batch (the recorder retries), never crash the process.
    await inTransaction(this.pool, async (client) => {
      for (const row of rows) await client.query(UPSERT, refusalValues(row, same));
    });
  }

  async list(filter: RefusalFilter & { readonly limit: number; readonly before?: RefusalCursor }): Promise<RefusalRecord[]> {
    const where = refusalWhere(filter, same, (index) => `$${index}`);
    const { rows } = await this.pool.query<RefusalRow<Date>>(
      `SELECT ${REFUSAL_COLUMNS} FROM refusals ${where.sql} ORDER BY created_at DESC, id DESC LIMIT $${where.params.length + 1}`,
      [...where.params, filter.limit],
    );
    return rows.map((row) => toRefusal(row, same));
  }

  async summary(filter: RefusalFilter): Promise<RefusalSummaryRow[]> {
    const where = refusalWhere(filter, same, (index) => `$${index}`);
    const { rows } = await this.pool.query<RefusalSummarySqlRow<Date>>(refusalSummarySql(where.sql), where.params);
    return rows.map((row) => toRefusalSummary(row, same));
  }
}
