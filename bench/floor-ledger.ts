/**
 * The cheapest ledger there is, for the paying floor: better-sqlite3 straight (WAL, synchronous =
 * NORMAL, as Tollgate's store), a charges table with Tollgate's columns, its primary key and the two
 * indexes an account's and a key's spend are read through, one prepared positional INSERT per row and
 * one balance UPDATE per account per batch, each batch one transaction. No foreign keys, no CHECKs, no
 * holds table, no named parameters, no retry: what any gateway that keeps a ledger row per request in
 * SQLite pays at least. `onTollgateSchema` runs the same statements on a file Tollgate's migrations
 * made (its indexes, foreign keys and CHECKs), so the table in bench/floor.ts can tell the schema's
 * share from the code's.
 */
import Database from 'better-sqlite3';

/** The floor's own table; the columns are Tollgate's, in its order. */
const FLOOR_SCHEMA = `
  CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS charges (
    request_id TEXT PRIMARY KEY, client_request_id TEXT, account_id TEXT NOT NULL, key_id TEXT NOT NULL,
    model TEXT NOT NULL, provider TEXT, endpoint TEXT NOT NULL,
    input_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, cache_write_1h_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, tool_calls TEXT NOT NULL,
    cost INTEGER NOT NULL, held INTEGER NOT NULL, overage INTEGER NOT NULL, unbilled INTEGER NOT NULL,
    prices TEXT, service_tier TEXT, long_context INTEGER NOT NULL, usage_source TEXT NOT NULL,
    status INTEGER NOT NULL, outcome TEXT NOT NULL, latency_ms INTEGER NOT NULL, created_at INTEGER NOT NULL,
    session_id TEXT, requested_model TEXT, served_model TEXT, attempts TEXT NOT NULL, ttfb_ms INTEGER,
    user_agent TEXT, origin TEXT
  ) STRICT;
  CREATE INDEX IF NOT EXISTS charges_account_time ON charges (account_id, created_at);
  CREATE INDEX IF NOT EXISTS charges_key_time ON charges (key_id, created_at);
`;

const INSERT = `INSERT INTO charges (
  request_id, client_request_id, account_id, key_id, model, provider, endpoint,
  input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, tool_calls,
  cost, held, overage, unbilled, prices, service_tier, long_context, usage_source,
  status, outcome, latency_ms, created_at, session_id, requested_model, served_model, attempts, ttfb_ms,
  user_agent, origin
) VALUES (${Array.from({ length: 32 }, () => '?').join(', ')})`;

/** What a request leaves for its ledger row. */
export interface FloorCharge {
  readonly requestId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly provider: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cost: bigint;
  readonly held: bigint;
  /** The model's price snapshot as JSON text: the same text for every row of that model. */
  readonly pricesText: string;
  readonly status: number;
  readonly latencyMs: number;
  readonly attemptMs: number;
  readonly userAgent: string | null;
}

export class FloorLedger {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly debit: Database.Statement;
  private rows: unknown[][] = [];
  private debits = new Map<string, bigint>();
  private readonly writeRows: (rows: readonly unknown[][], debits: ReadonlyMap<string, bigint>) => void;

  /** `file` gets the floor's own table, unless `onTollgateSchema` (Tollgate's migrations made it). */
  constructor(file: string, options: { onTollgateSchema?: boolean } = {}) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    if (options.onTollgateSchema === true) this.db.pragma('foreign_keys = ON');
    else this.db.exec(FLOOR_SCHEMA);
    this.insert = this.db.prepare(INSERT);
    this.debit = this.db.prepare('UPDATE accounts SET balance = balance - ? WHERE id = ?');
    this.writeRows = this.db.transaction((rows: readonly unknown[][], debits: ReadonlyMap<string, bigint>) => {
      for (const row of rows) this.insert.run(row);
      for (const [accountId, cost] of debits) this.debit.run(cost, accountId);
    });
  }

  /** An account to charge, with a balance it cannot exhaust (on the floor's own table only). */
  addAccount(id: string): void {
    this.db.prepare('INSERT INTO accounts (id, balance) VALUES (?, ?)').run(id, 10n ** 18n);
  }

  get queued(): number {
    return this.rows.length;
  }

  add(charge: FloorCharge, createdAt: number): void {
    this.rows.push([
      charge.requestId, null, charge.accountId, charge.keyId, charge.model, charge.provider, 'chat',
      charge.inputTokens, 0, 0, 0, charge.outputTokens, '{}',
      charge.cost, charge.held, 0n, 0n, charge.pricesText, null, 0, 'upstream',
      charge.status, 'delivered', Math.round(charge.latencyMs), createdAt, null, null, charge.model,
      JSON.stringify([{ provider: charge.provider, outcome: 'ok', ms: Math.round(charge.attemptMs) }]), null,
      charge.userAgent, null,
    ]);
    this.debits.set(charge.accountId, (this.debits.get(charge.accountId) ?? 0n) + charge.cost);
  }

  /** Writes what was added, in one transaction. */
  write(): void {
    if (this.rows.length === 0) return;
    const rows = this.rows;
    const debits = this.debits;
    this.rows = [];
    this.debits = new Map();
    this.writeRows(rows, debits);
  }

  close(): void {
    this.db.close();
  }
}
