/**
 * The refusals table (`store/refusals.ts`), in both dialects: refused requests beside the ledger,
 * never in it. Read by account and time (Usage, Analytics) and by time alone (the operator's totals),
 * and for an organisation by member (a refusal of a member's key records the member, as a charge does).
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

const MEMBER_SQL = `
    -- The member whose key in an organisation was refused (the key's member_account_id); NULL for a
    -- key of the account's own, and for a request of no key.
    ALTER TABLE refusals ADD COLUMN member_account_id TEXT;
    CREATE INDEX refusals_member ON refusals (account_id, member_account_id, created_at) WHERE member_account_id IS NOT NULL;
  `;

export const SQLITE_REFUSALS_MEMBER_MIGRATION = { description: "refused requests record the organisation's member whose key it was", sql: MEMBER_SQL };

export const POSTGRES_REFUSALS_MEMBER_MIGRATION = { description: "refused requests record the organisation's member whose key it was", sql: MEMBER_SQL };
