/** Monthly statements on SQLite (see statements.ts): issued in one IMMEDIATE transaction on the single writer. */
import type { PeriodLedger } from '../money/statement';
import type { SqliteDatabase } from './sqlite-driver';
import { documentHash, firstEntrySql, newStatementId, periodLedgerOf, periodLedgerSql, type IssueRequest, type StatementStore, type StoredStatement } from './statements';

interface StatementRow {
  id: string;
  number: string;
  account_id: string;
  month: string;
  issued_at: number;
  document: string;
  hash: string;
}

const COLUMNS = 'id, number, account_id, month, issued_at, document, hash';
const SUMS = periodLedgerSql({ text: (expression) => `CAST(${expression} AS TEXT)`, account: '@account', start: '@start', end: '@end' });

function toStatement(row: StatementRow): StoredStatement {
  return { id: row.id, number: row.number, accountId: row.account_id, month: row.month, issuedAt: new Date(row.issued_at), document: row.document, hash: row.hash };
}

export class SqliteStatements implements StatementStore {
  constructor(private readonly db: SqliteDatabase) {}

  async issue(request: IssueRequest): Promise<StoredStatement> {
    return this.db.transaction(() => this.issueNow(request)).immediate();
  }

  async list(accountId: string): Promise<StoredStatement[]> {
    return this.db.prepare<[string], StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE account_id = ? ORDER BY month DESC`).all(accountId).map(toStatement);
  }

  async find(id: string): Promise<StoredStatement | null> {
    const row = this.db.prepare<[string], StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE id = ?`).get(id);
    return row === undefined ? null : toStatement(row);
  }

  async firstEntry(accountId: string): Promise<Date | null> {
    const row = this.db.prepare<[{ account: string }], Record<string, number | null>>(firstEntrySql('@account')).get({ account: accountId });
    const times = Object.values(row ?? {}).filter((at): at is number => at !== null);
    return times.length === 0 ? null : new Date(Math.min(...times));
  }

  private issueNow(request: IssueRequest): StoredStatement {
    const existing = this.db.prepare<[string, string], StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE account_id = ? AND month = ?`).get(request.accountId, request.month);
    if (existing !== undefined) return toStatement(existing);
    const previous = this.db
      .prepare<[string, string], StatementRow>(`SELECT ${COLUMNS} FROM statements WHERE account_id = ? AND month < ? ORDER BY month DESC LIMIT 1`)
      .get(request.accountId, request.month);
    const sequence = this.db.prepare<[number], number>('SELECT COALESCE(max(sequence), 0) + 1 FROM statements WHERE year = ?').pluck().get(request.year) ?? 1;
    const { number, document } = request.compose(this.periodLedger(request), previous === undefined ? null : toStatement(previous), sequence);
    const row: StatementRow = { id: newStatementId(), number, account_id: request.accountId, month: request.month, issued_at: request.issuedAt.getTime(), document, hash: documentHash(document) };
    this.db
      .prepare<[Record<string, unknown>]>(
        `INSERT INTO statements (id, number, year, sequence, account_id, month, issued_at, document, hash)
         VALUES (@id, @number, @year, @sequence, @account_id, @month, @issued_at, @document, @hash)`,
      )
      .run({ ...row, year: request.year, sequence });
    return toStatement(row);
  }

  private periodLedger(request: IssueRequest): PeriodLedger {
    const params = { account: request.accountId, start: request.start.getTime(), end: request.end.getTime() };
    const all = <R>(sql: string) => this.db.prepare<[typeof params], R>(sql).all(params);
    return periodLedgerOf({
      before: this.db.prepare<[typeof params], string>(SUMS.before).pluck().get(params) ?? '0',
      credits: all(SUMS.credits),
      debits: all(SUMS.debits),
      byModel: all(SUMS.byModel),
      byPayer: all(SUMS.byPayer),
    });
  }
}
