/**
 * Monthly statements as the store keeps them: issued once per account and month, numbered in one
 * sequence per year for the whole operator, and never changed afterwards (the table refuses updates
 * and deletes). The store reads the month's ledger sums and writes the row in one transaction; what
 * the sums mean is `src/money/statement.ts`, what the document says is `src/statements/`.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ChargeGroup, KindSum, PeriodLedger } from '../money/statement';

export interface StoredStatement {
  readonly id: string;
  /** `TG-2026-000123`: the operator's prefix, the year of the month, the sequence within that year. */
  readonly number: string;
  readonly accountId: string;
  /** `2026-11`: the calendar month (UTC) it covers. */
  readonly month: string;
  readonly issuedAt: Date;
  /** The statement as issued (JSON): its figures frozen, whatever reaches the ledger later. */
  readonly document: string;
  /** SHA-256 of `document`, hex: a row whose document was altered no longer matches it. */
  readonly hash: string;
}

/** What issuing one account's month needs; `compose` runs inside the issuing transaction. */
export interface IssueRequest {
  readonly accountId: string;
  readonly month: string;
  /** The year the sequence counts in. */
  readonly year: number;
  readonly start: Date;
  readonly end: Date;
  readonly issuedAt: Date;
  /** The statement's number and document from the month's ledger, the previous statement and the next sequence number. */
  compose(ledger: PeriodLedger, previous: StoredStatement | null, sequence: number): { readonly number: string; readonly document: string };
}

export interface StatementStore {
  /**
   * Issues the account's statement of the month, once however many callers race on however many
   * instances: the stored one when the month was issued already, else a new row with the next number.
   */
  issue(request: IssueRequest): Promise<StoredStatement>;
  /** One account's statements, newest month first. */
  list(accountId: string): Promise<StoredStatement[]>;
  find(id: string): Promise<StoredStatement | null>;
  /** When the account's first ledger entry was dated; null when it has none. */
  firstEntry(accountId: string): Promise<Date | null>;
}

/** SHA-256 of a document, hex. */
export function documentHash(document: string): string {
  return createHash('sha256').update(document, 'utf8').digest('hex');
}

/**
 * Who spent a charge, for the statement's charges by member: the one place that says so. The member
 * of an organisation whose key made it (charges.member_account_id); on a personal account, the
 * account itself, its one member.
 */
const PAYER = { expression: 'COALESCE(c.member_account_id, c.account_id)', names: 'accounts' } as const;

/** How the shared statement SQL reads in each dialect. */
export interface StatementDialect {
  /** An integer expression as text, so no amount passes through a JS number. */
  text(expression: string): string;
  /** The placeholders of the account, the period's start and its end, in that order. */
  readonly account: string;
  readonly start: string;
  readonly end: string;
}

/** The queries of one account's period ledger (see PeriodLedger). */
export function periodLedgerSql(dialect: StatementDialect): { before: string; credits: string; debits: string; byModel: string; byPayer: string } {
  const { account, start, end, text } = dialect;
  const earlier = (table: string, column: string) => `(SELECT COALESCE(sum(${column}), 0) FROM ${table} WHERE account_id = ${account} AND created_at < ${start})`;
  const inPeriod = (alias = '') => `${alias}account_id = ${account} AND ${alias}created_at >= ${start} AND ${alias}created_at < ${end}`;
  const kinds = (table: string) => `SELECT kind, ${text('sum(amount)')} AS amount, count(*) AS entries FROM ${table} WHERE ${inPeriod()} GROUP BY kind ORDER BY kind`;
  return {
    before: `SELECT ${text(`${earlier('credits', 'amount')} - ${earlier('charges', 'cost')} - ${earlier('debits', 'amount')}`)} AS amount`,
    credits: kinds('credits'),
    debits: kinds('debits'),
    byModel: `SELECT model AS id, model AS name, count(*) AS requests, ${text('sum(cost)')} AS amount FROM charges WHERE ${inPeriod()}
               GROUP BY model ORDER BY sum(cost) DESC, model`,
    byPayer: `SELECT ${PAYER.expression} AS id, p.name AS name, count(*) AS requests, ${text('sum(c.cost)')} AS amount
                FROM charges c LEFT JOIN ${PAYER.names} p ON p.id = ${PAYER.expression}
               WHERE ${inPeriod('c.')}
               GROUP BY ${PAYER.expression}, p.name ORDER BY sum(c.cost) DESC, ${PAYER.expression}`,
  };
}

/** The earliest ledger entry of the account, as one query's three minimums. */
export function firstEntrySql(account: string): string {
  const first = (table: string) => `(SELECT min(created_at) FROM ${table} WHERE account_id = ${account})`;
  return `SELECT ${first('credits')} AS credits, ${first('charges')} AS charges, ${first('debits')} AS debits`;
}

/** Rows of the period ledger's queries, as either dialect returns them. */
export interface SumRows {
  readonly before: string;
  readonly credits: readonly { kind: string; amount: string; entries: number | string }[];
  readonly debits: readonly { kind: string; amount: string; entries: number | string }[];
  readonly byModel: readonly { id: string; name: string | null; requests: number | string; amount: string }[];
  readonly byPayer: readonly { id: string; name: string | null; requests: number | string; amount: string }[];
}

/** The period ledger from its queries' rows. */
export function periodLedgerOf(rows: SumRows): PeriodLedger {
  const kind = (row: SumRows['credits'][number]): KindSum => ({ kind: row.kind, amount: BigInt(row.amount), entries: Number(row.entries) });
  const group = (row: SumRows['byModel'][number]): ChargeGroup => ({ id: row.id, name: row.name, requests: Number(row.requests), amount: BigInt(row.amount) });
  return {
    before: BigInt(rows.before),
    credits: rows.credits.map(kind),
    debits: rows.debits.map(kind),
    chargesByModel: rows.byModel.map(group),
    chargesByPayer: rows.byPayer.map(group),
  };
}

/** A new statement id: `st_` and 16 hex digits. */
export function newStatementId(): string {
  return `st_${randomBytes(8).toString('hex')}`;
}
