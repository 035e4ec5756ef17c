/**
 * The refusals table (`store/refusals.ts`), in both dialects: refused requests beside the ledger,
 * never in it. Read by account and time (Usage, Analytics) and by time alone (the operator's totals).
 */

export const SQLITE_REFUSALS_MIGRATION = {
  description: 'refused requests: status, code, what refused them, how many a row stands for',
  sql: `
    CREATE TABLE refusals (
      id         TEXT PRIMARY KEY,
      created_at INTEGER NOT NULL,
      account_id TEXT,
      key_id     TEXT,
      address    TEXT,
      model      TEXT,
      endpoint   TEXT NOT NULL,
      status     INTEGER NOT NULL,
      code       TEXT NOT NULL,
      level      TEXT,
      count      INTEGER NOT NULL CHECK (count >= 1),
      session_id TEXT
    ) STRICT;
    CREATE INDEX refusals_account ON refusals (account_id, created_at);
    CREATE INDEX refusals_at ON refusals (created_at);
  `,
};

export const POSTGRES_REFUSALS_MIGRATION = {
  description: 'refused requests: status, code, what refused them, how many a row stands for',
  sql: `
    CREATE TABLE refusals (
      id         TEXT PRIMARY KEY,
      created_at TIMESTAMPTZ NOT NULL,
      account_id TEXT,
      key_id     TEXT,
      address    TEXT,
      model      TEXT,
      endpoint   TEXT NOT NULL,
      status     INTEGER NOT NULL,
      code       TEXT NOT NULL,
      level      TEXT,
      count      BIGINT NOT NULL CHECK (count >= 1),
      session_id TEXT
    );
    CREATE INDEX refusals_account ON refusals (account_id, created_at);
    CREATE INDEX refusals_at ON refusals (created_at);
  `,
};
