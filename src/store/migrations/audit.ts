/**
 * The audit table, in both dialects. Kept in its own file and appended to each migration list as
 * one self-contained step. Times are written from the application's clock, as elsewhere; `seq` (and
 * SQLite's rowid) orders entries made in the same millisecond.
 */

export const SQLITE_AUDIT_MIGRATION = {
  description: 'the audit log',
  sql: `
    CREATE TABLE audit (
      id         TEXT PRIMARY KEY,
      at         INTEGER NOT NULL,
      actor      TEXT NOT NULL,
      surface    TEXT NOT NULL CHECK (surface IN ('console', 'api', 'cli', 'server')),
      action     TEXT NOT NULL,
      target     TEXT,
      account_id TEXT,
      before     TEXT,
      after      TEXT,
      request_id TEXT
    ) STRICT;
    CREATE INDEX audit_at ON audit (at);
    CREATE INDEX audit_actor ON audit (actor, at);
    CREATE INDEX audit_target ON audit (target, at);
    CREATE INDEX audit_account ON audit (account_id, at);
  `,
};

export const POSTGRES_AUDIT_MIGRATION = {
  description: 'the audit log',
  sql: `
    CREATE TABLE audit (
      id         TEXT PRIMARY KEY,
      seq        BIGINT GENERATED ALWAYS AS IDENTITY,
      at         TIMESTAMPTZ NOT NULL,
      actor      TEXT NOT NULL,
      surface    TEXT NOT NULL CHECK (surface IN ('console', 'api', 'cli', 'server')),
      action     TEXT NOT NULL,
      target     TEXT,
      account_id TEXT,
      before     TEXT,
      after      TEXT,
      request_id TEXT
    );
    CREATE INDEX audit_at ON audit (at);
    CREATE INDEX audit_actor ON audit (actor, at);
    CREATE INDEX audit_target ON audit (target, at);
    CREATE INDEX audit_account ON audit (account_id, at);
  `,
};
