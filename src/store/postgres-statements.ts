/**
 * Monthly statements on PostgreSQL (see statements.ts). Issuing takes one transaction-scoped advisory
 * lock, so instances issuing at once queue: the second finds the first's row, and numbers never collide.
 */
import type { Pool, PoolClient } from 'pg';
import { inTransaction } from './postgres-tx';
import { documentHash, firstEntrySql, newStatementId, periodLedgerOf, periodLedgerSql, type IssueRequest, type StatementStore, type StoredStatement } from './statements';

interface StatementRow {
  id: string;
  number: string;
  account_id: string;
  month: string;
  issued_at: Date;
  document: string;
  hash: string;
}

const COLUMNS = 'id, number, account_id, month, issued_at, document, hash';
const SUMS = periodLedgerSql({ text: (expression) => `(${expression})::text`, account: '$1', start: '$2', end: '$3' });
/** Any constant of its own: the issuing of statements, one at a time across instances. */
const ISSUE_LOCK_KEY = 0x73746d74; // "stmt"

function toStatement(row: StatementRow): StoredStatement {
  return { id: row.id, number: row.number, accountId: row.account_id, month: row.month, issuedAt: row.issued_at, document: row.document, hash: row.hash };
}

export class PostgresStatements implements StatementStore {
  constructor(private readonly pool: Pool) {}

  async issue(request: IssueRequest): Promise<StoredStatement> {
    return inTransaction(this.pool, (client) => this.issueIn(client, request));
  }

  async list(accountId: string): Promise<StoredStatement[]> {
    const { rows } = await this.pool.query<StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE account_id = $1 ORDER BY month DESC`, [accountId]);
    return rows.map(toStatement);
  }

  async find(id: string): Promise<StoredStatement | null> {
    const { rows } = await this.pool.query<StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE id = $1`, [id]);
    return rows.length === 0 ? null : toStatement(rows[0]);
  }

  async firstEntry(accountId: string): Promise<Date | null> {
    const { rows } = await this.pool.query<Record<string, Date | null>>(firstEntrySql('$1'), [accountId]);
    const times = Object.values(rows[0] ?? {}).filter((at): at is Date => at !== null).map((at) => at.getTime());
    return times.length === 0 ? null : new Date(Math.min(...times));
  }

  private async issueIn(client: PoolClient, request: IssueRequest): Promise<StoredStatement> {
    await client.query('SELECT pg_advisory_xact_lock($1)', [ISSUE_LOCK_KEY]);
    const existing = await client.query<StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE account_id = $1 AND month = $2`, [request.accountId, request.month]);
    if (existing.rows.length > 0) return toStatement(existing.rows[0]);
    const previous = await client.query<StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE account_id = $1 AND month < $2 ORDER BY month DESC LIMIT 1`, [
      request.accountId,
      request.month,
    ]);
    const next = await client.query<{ sequence: number }>('SELECT COALESCE(max(sequence), 0) + 1 AS sequence FROM statements WHERE year = $1', [request.year]);
    const sequence = Number(next.rows[0].sequence);
    const params = [request.accountId, request.start, request.end];
    const sums = async <R extends object>(sql: string) => (await client.query<R>(sql, params)).rows;
    const ledger = periodLedgerOf({
      before: (await client.query<{ amount: string }>(SUMS.before, params.slice(0, 2))).rows[0].amount,
      credits: await sums(SUMS.credits),
      debits: await sums(SUMS.debits),
      byModel: await sums(SUMS.byModel),
      byPayer: await sums(SUMS.byPayer),
    });
    const { number, document } = request.compose(ledger, previous.rows.length === 0 ? null : toStatement(previous.rows[0]), sequence);
    const row: StatementRow = { id: newStatementId(), number, account_id: request.accountId, month: request.month, issued_at: request.issuedAt, document, hash: documentHash(document) };
    await client.query(
      `INSERT INTO statements (id, number, year, sequence, account_id, month, issued_at, document, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [row.id, row.number, request.year, sequence, row.account_id, row.month, row.issued_at, row.document, row.hash],
    );
    return toStatement(row);
  }
}
