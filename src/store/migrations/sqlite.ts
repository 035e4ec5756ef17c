/**
 * The SQLite schema, as an ordered list of migrations. Each one runs once, inside its own transaction,
 * and is recorded in `schema_migrations`. To change the schema, append an entry; never edit one that
 * has shipped, since stores in the field have already applied it.
 */
import type { SqliteDatabase } from '../sqlite-driver';
import { SQLITE_AUDIT_MIGRATION } from './audit';
import { SQLITE_REFUSALS_MEMBER_MIGRATION, SQLITE_REFUSALS_MIGRATION } from './refusals';

/** One schema step. `version` is its position in the list, starting at 1. */
export interface SqliteMigration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
  /**
   * Rebuilds a table others reference (SQLite cannot drop a CHECK in place): foreign keys are off while
   * it runs, and every reference is checked before it commits.
   */
  readonly rebuildsTables?: boolean;
}

/**
 * Every migration, oldest first. Tables are STRICT so a wrong type fails loudly instead of being
 * stored as whatever SQLite coerces it to. Dates are integer milliseconds since the epoch.
 */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    description: 'accounts and API keys',
    sql: `
      CREATE TABLE accounts (
        id         TEXT PRIMARY KEY,
        name       TEXT NOT NULL UNIQUE,
        role       TEXT NOT NULL CHECK (role IN ('admin', 'user')),
        disabled   INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        created_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE api_keys (
        id         TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        name       TEXT,
        hash       BLOB NOT NULL CHECK (length(hash) = 32),
        prefix     TEXT NOT NULL,
        last4      TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER,
        expires_at INTEGER
      ) STRICT;

      -- Authentication looks keys up by hash on every uncached request.
      CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
      CREATE INDEX api_keys_account ON api_keys (account_id);
    `,
  },
  {
    version: 2,
    description: 'balances, holds, the ledger (charges and credits), key limits, redemption codes',
    sql: `
      -- Money columns are integer nano-units. balance = credits - charges, kept by the transactions
      -- that append to the ledger; held = the sum of the account's open holds.
      ALTER TABLE accounts ADD COLUMN balance INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0);
      ALTER TABLE accounts ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0);

      ALTER TABLE api_keys ADD COLUMN spend_limit INTEGER CHECK (spend_limit IS NULL OR spend_limit >= 0);
      ALTER TABLE api_keys ADD COLUMN spent INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0);
      ALTER TABLE api_keys ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0);
      -- A JSON array of model ids, or NULL for every model.
      ALTER TABLE api_keys ADD COLUMN models TEXT;

      CREATE TABLE holds (
        request_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        key_id     TEXT NOT NULL REFERENCES api_keys (id),
        amount     INTEGER NOT NULL CHECK (amount >= 0),
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX holds_expiry ON holds (expires_at);

      -- Append-only: one row per request id, never updated.
      CREATE TABLE charges (
        request_id         TEXT PRIMARY KEY,
        account_id         TEXT NOT NULL REFERENCES accounts (id),
        key_id             TEXT NOT NULL REFERENCES api_keys (id),
        model              TEXT NOT NULL,
        provider           TEXT,
        endpoint           TEXT NOT NULL,
        input_tokens       INTEGER NOT NULL CHECK (input_tokens >= 0),
        cache_write_tokens INTEGER NOT NULL CHECK (cache_write_tokens >= 0),
        cache_read_tokens  INTEGER NOT NULL CHECK (cache_read_tokens >= 0),
        output_tokens      INTEGER NOT NULL CHECK (output_tokens >= 0),
        cost               INTEGER NOT NULL CHECK (cost >= 0),
        usage_source       TEXT NOT NULL CHECK (usage_source IN ('upstream', 'estimated', 'partial', 'none')),
        status             INTEGER NOT NULL,
        outcome            TEXT NOT NULL CHECK (outcome IN ('delivered', 'aborted', 'failed')),
        latency_ms         INTEGER NOT NULL,
        created_at         INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX charges_account_time ON charges (account_id, created_at);
      CREATE INDEX charges_key_time ON charges (key_id, created_at);

      -- Append-only: top-ups, redemptions and admin credits, with who and why.
      CREATE TABLE credits (
        id         TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount     INTEGER NOT NULL CHECK (amount > 0),
        kind       TEXT NOT NULL CHECK (kind IN ('topup', 'redemption', 'admin')),
        actor      TEXT,
        note       TEXT,
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX credits_account_time ON credits (account_id, created_at);

      CREATE TABLE redemption_codes (
        id          TEXT PRIMARY KEY,
        hash        BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
        amount      INTEGER NOT NULL CHECK (amount > 0),
        created_at  INTEGER NOT NULL,
        created_by  TEXT,
        expires_at  INTEGER,
        redeemed_by TEXT REFERENCES accounts (id),
        redeemed_at INTEGER,
        credit_id   TEXT REFERENCES credits (id)
      ) STRICT;
    `,
  },
  {
    version: 3,
    description: 'console: e-mail and password of accounts, per-key rate limits, sessions and management tokens',
    sql: `
      -- Stored lower-cased; an account logs in by name or e-mail.
      ALTER TABLE accounts ADD COLUMN email TEXT;
      CREATE UNIQUE INDEX accounts_email ON accounts (email);
      -- scrypt, in the self-describing form written by src/auth/passwords.ts; NULL: no console login.
      ALTER TABLE accounts ADD COLUMN password_hash TEXT;

      -- JSON object {rpm?, tpm?, concurrency?} set by the key's owner, or NULL.
      ALTER TABLE api_keys ADD COLUMN rate_limits TEXT;

      -- Console sessions (cookie) and management tokens (bearer), by the SHA-256 of their secret.
      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY,
        hash       BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind       TEXT NOT NULL CHECK (kind IN ('session', 'token')),
        name       TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER
      ) STRICT;
      CREATE INDEX sessions_account ON sessions (account_id, kind);
      CREATE INDEX sessions_expiry ON sessions (expires_at);
    `,
  },
  {
    version: 4,
    description: 'exact billing: overage below zero, 1-hour cache writes, server-tool calls, the prices and hold of each charge',
    rebuildsTables: true,
    sql: `
      -- A balance may go below zero by a charge's recorded overage (the upstream billed more than was
      -- held), so the accounts table is rebuilt without its CHECK (balance >= 0); holds still need
      -- balance - held >= amount.
      CREATE TABLE accounts_new (
        id            TEXT PRIMARY KEY,
        name          TEXT NOT NULL UNIQUE,
        role          TEXT NOT NULL CHECK (role IN ('admin', 'user')),
        disabled      INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        created_at    INTEGER NOT NULL,
        balance       INTEGER NOT NULL DEFAULT 0,
        held          INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
        email         TEXT,
        password_hash TEXT
      ) STRICT;
      INSERT INTO accounts_new (rowid, id, name, role, disabled, created_at, balance, held, email, password_hash)
        SELECT rowid, id, name, role, disabled, created_at, balance, held, email, password_hash FROM accounts;
      DROP TABLE accounts;
      ALTER TABLE accounts_new RENAME TO accounts;
      CREATE UNIQUE INDEX accounts_email ON accounts (email);

      ALTER TABLE charges ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cache_write_1h_tokens >= 0);
      -- The client's own x-request-id, for correlation; request_id is always Tollgate's.
      ALTER TABLE charges ADD COLUMN client_request_id TEXT;
      -- JSON object of tool name -> calls billed per call (web_search ...).
      ALTER TABLE charges ADD COLUMN tool_calls TEXT NOT NULL DEFAULT '{}';
      ALTER TABLE charges ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0);
      ALTER TABLE charges ADD COLUMN overage INTEGER NOT NULL DEFAULT 0 CHECK (overage >= 0);
      ALTER TABLE charges ADD COLUMN unbilled INTEGER NOT NULL DEFAULT 0 CHECK (unbilled >= 0);
      -- JSON of the per-kind prices the cost was computed at (nano-units); NULL for free models and older rows.
      ALTER TABLE charges ADD COLUMN prices TEXT;
    `,
  },
  { version: 5, ...SQLITE_AUDIT_MIGRATION },
  {
    version: 6,
    description: 'charges the store refused, set aside with the error instead of blocking the ledger writer',
    sql: `
      -- No foreign keys and no CHECKs: whatever the ledger refused must fit here.
      CREATE TABLE set_aside_charges (
        request_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        error      TEXT NOT NULL,
        record     TEXT NOT NULL,
        created_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 7,
    description: 'a revision of keys and accounts, so processes sharing the file (server.workers) keep their key caches',
    sql: `
      -- Moved by every change authentication depends on, in any process; balances, holds and spend
      -- move without it (the same columns as PostgreSQL's NOTIFY triggers). PRAGMA data_version alone
      -- moves on every commit of another process, so workers holding funds through the file would
      -- empty each other's key caches at every request.
      CREATE TABLE keys_revision (
        id       INTEGER PRIMARY KEY CHECK (id = 1),
        revision INTEGER NOT NULL
      ) STRICT;
      INSERT INTO keys_revision (id, revision) VALUES (1, 0);
      CREATE TRIGGER accounts_insert_revision AFTER INSERT ON accounts
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER accounts_delete_revision AFTER DELETE ON accounts
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER accounts_update_revision AFTER UPDATE OF id, name, email, role, disabled ON accounts
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER api_keys_insert_revision AFTER INSERT ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER api_keys_delete_revision AFTER DELETE ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER api_keys_update_revision
        AFTER UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
    `,
  },
  {
    version: 8,
    description: 'usage analytics: session, requested and served model, attempts, time to first byte, user agent, origin of each charge',
    sql: `
      -- Where a request came from and what served it, for usage analytics; never prompt or completion text.
      -- The client's session (Claude Code, Codex or x-tollgate-session), bounded and printable.
      ALTER TABLE charges ADD COLUMN session_id TEXT;
      -- The name the client sent, when an alias or pattern resolved it to another model.
      ALTER TABLE charges ADD COLUMN requested_model TEXT;
      -- The provider's own model name that served the answer.
      ALTER TABLE charges ADD COLUMN served_model TEXT;
      -- JSON array of the upstream attempts: [{provider, outcome, ms}].
      ALTER TABLE charges ADD COLUMN attempts TEXT NOT NULL DEFAULT '[]';
      ALTER TABLE charges ADD COLUMN ttfb_ms INTEGER;
      ALTER TABLE charges ADD COLUMN user_agent TEXT;
      ALTER TABLE charges ADD COLUMN origin TEXT CHECK (origin IS NULL OR origin IN ('playground'));
      -- The operator's summaries across accounts read a time range of every account.
      CREATE INDEX charges_time ON charges (created_at);
      -- An account's sessions, and one session's requests.
      CREATE INDEX charges_account_session ON charges (account_id, session_id, created_at) WHERE session_id IS NOT NULL;
    `,
  },
  {
    version: 9,
    description: 'the service level each charge was priced at: the tier its reply reported, and whether long-context rates applied',
    sql: `
      -- NULL: the reply named no tier (and every row older than this migration).
      ALTER TABLE charges ADD COLUMN service_tier TEXT;
      ALTER TABLE charges ADD COLUMN long_context INTEGER NOT NULL DEFAULT 0 CHECK (long_context IN (0, 1));
    `,
  },
  {
    version: 10,
    description: 'card payments: orders, the Stripe events seen, debits (refunds, disputes), payment profiles',
    sql: `
      -- One row per top-up asked of Stripe. Amounts: amount_minor in the currency's minor unit (what
      -- Stripe charges), credit_amount in nano-units (what the ledger gets), fixed when the order is made.
      -- credit_id is set once, by the transaction that writes the credit: the exactly-once guard.
      CREATE TABLE payment_orders (
        id                TEXT PRIMARY KEY,
        account_id        TEXT NOT NULL REFERENCES accounts (id),
        kind              TEXT NOT NULL CHECK (kind IN ('checkout', 'auto_recharge')),
        status            TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'failed', 'expired')),
        currency          TEXT NOT NULL,
        amount_minor      INTEGER NOT NULL CHECK (amount_minor > 0),
        credit_amount     INTEGER NOT NULL CHECK (credit_amount > 0),
        session_id        TEXT UNIQUE,
        payment_intent_id TEXT UNIQUE,
        credit_id         TEXT UNIQUE REFERENCES credits (id),
        refunded_minor    INTEGER NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
        disputed          INTEGER NOT NULL DEFAULT 0 CHECK (disputed IN (0, 1)),
        receipt_url       TEXT,
        error             TEXT,
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX payment_orders_account ON payment_orders (account_id, created_at);
      CREATE INDEX payment_orders_status ON payment_orders (status, created_at);

      -- Append-only: funds taken back from a paid order. source names the Stripe object and state it
      -- came from, once: a webhook delivered twice finds its debit already there.
      CREATE TABLE debits (
        id         TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount     INTEGER NOT NULL CHECK (amount > 0),
        kind       TEXT NOT NULL CHECK (kind IN ('refund', 'dispute')),
        order_id   TEXT NOT NULL REFERENCES payment_orders (id),
        source     TEXT NOT NULL UNIQUE,
        note       TEXT,
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX debits_account_time ON debits (account_id, created_at);

      -- Every Stripe event handled, by Stripe's id: a repeat is answered without being handled again.
      CREATE TABLE payment_events (
        id          TEXT PRIMARY KEY,
        type        TEXT NOT NULL,
        order_id    TEXT,
        received_at INTEGER NOT NULL
      ) STRICT;

      -- Per account: the Stripe customer and saved card, auto-recharge settings and state, the dispute flag.
      CREATE TABLE payment_profiles (
        account_id          TEXT PRIMARY KEY REFERENCES accounts (id),
        customer_id         TEXT,
        payment_method_id   TEXT,
        auto_recharge       INTEGER NOT NULL DEFAULT 0 CHECK (auto_recharge IN (0, 1)),
        threshold           INTEGER NOT NULL DEFAULT 0 CHECK (threshold >= 0),
        recharge_minor      INTEGER NOT NULL DEFAULT 0 CHECK (recharge_minor >= 0),
        monthly_cap_minor   INTEGER NOT NULL DEFAULT 0 CHECK (monthly_cap_minor >= 0),
        failures            INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
        last_error          TEXT,
        needs_action        INTEGER NOT NULL DEFAULT 0 CHECK (needs_action IN (0, 1)),
        flagged_at          INTEGER,
        flag_reason         TEXT,
        updated_at          INTEGER NOT NULL
      ) STRICT;

      -- Background work one instance does at a time (the reconcile job): held until expires_at.
      CREATE TABLE payment_leases (
        name       TEXT PRIMARY KEY,
        holder     TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 11,
    description: 'budgets per period on keys and accounts, and the alerts they raise',
    sql: `
      -- JSON {"amount": nano-units as text, "period": "day"|"week"|"month", "timezone": IANA name}, or NULL.
      ALTER TABLE accounts ADD COLUMN budget TEXT;
      ALTER TABLE api_keys ADD COLUMN budget TEXT;

      -- Authentication reads budgets with the key: a change must reach every process's key cache.
      DROP TRIGGER accounts_update_revision;
      CREATE TRIGGER accounts_update_revision AFTER UPDATE OF id, name, email, role, disabled, budget ON accounts
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      DROP TRIGGER api_keys_update_revision;
      CREATE TRIGGER api_keys_update_revision
        AFTER UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;

      -- One row per alert that fired; once is unique, so racing instances fire each alert once.
      CREATE TABLE budget_alerts (
        id           TEXT PRIMARY KEY,
        once         TEXT NOT NULL UNIQUE,
        account_id   TEXT NOT NULL REFERENCES accounts (id),
        key_id       TEXT REFERENCES api_keys (id),
        kind         TEXT NOT NULL CHECK (kind IN ('budget', 'balance')),
        body         TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        delivered_at INTEGER,
        attempts     INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX budget_alerts_account_time ON budget_alerts (account_id, created_at);
      CREATE INDEX budget_alerts_undelivered ON budget_alerts (created_at) WHERE delivered_at IS NULL;
    `,
  },
  {
    version: 12,
    description: 'usage summaries answered from indexes alone: by time across accounts, by account and time',
    sql: `
      -- Every column a usage summary groups or sums rides in the two indexes its ranges are read
      -- through, so a summary over a million charges never reads the table. Each replaces an index
      -- with the same leading columns: a charge still updates as many indexes as before (wider ones).
      -- The operator's summaries across accounts: a time range of every account.
      CREATE INDEX charges_time_totals ON charges (
        created_at, account_id, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens
      );
      DROP INDEX charges_time;
      -- An account's own summaries and spend; across accounts, the summary by account reads it in
      -- account order and needs no sort.
      CREATE INDEX charges_account_totals ON charges (
        account_id, created_at, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens
      );
      DROP INDEX charges_account_time;
    `,
  },
  {
    version: 13,
    description: 'access: names unique whatever their case, credentials that end, second factors, key networks and operator limits',
    sql: `
      -- Names that differ only in case: the oldest account keeps its name; each later one is renamed
      -- to <name>-<rowid> (nothing is deleted; its keys, balance and e-mail login are untouched, and
      -- "tollgate account list" shows the new name). Then the index makes such clashes impossible.
      UPDATE accounts SET name = name || '-' || rowid
       WHERE EXISTS (SELECT 1 FROM accounts older WHERE lower(older.name) = lower(accounts.name) AND older.rowid < accounts.rowid);
      CREATE UNIQUE INDEX accounts_name_nocase ON accounts (lower(name));

      -- When a session or token was last used, and the browser (or client) that signed in.
      ALTER TABLE sessions ADD COLUMN last_used_at INTEGER;
      ALTER TABLE sessions ADD COLUMN user_agent TEXT;
      -- Management tokens made before tokens expired: they end 90 days after the upgrade.
      UPDATE sessions SET expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 90 * 86400000
       WHERE kind = 'token' AND expires_at IS NULL;

      -- TOTP (RFC 6238): the shared secret (base32), the last time step accepted (a code is never
      -- taken twice), and whether enrolment was confirmed with a first code.
      CREATE TABLE second_factors (
        account_id   TEXT PRIMARY KEY REFERENCES accounts (id),
        secret       TEXT NOT NULL,
        confirmed_at INTEGER,
        last_step    INTEGER,
        created_at   INTEGER NOT NULL
      ) STRICT;
      -- One-time recovery codes, by the SHA-256 of their text.
      CREATE TABLE recovery_codes (
        account_id TEXT NOT NULL REFERENCES accounts (id),
        hash       BLOB NOT NULL CHECK (length(hash) = 32),
        used_at    INTEGER,
        PRIMARY KEY (account_id, hash)
      ) STRICT;

      -- JSON array of CIDRs the key's owner allows requests from; NULL: anywhere.
      ALTER TABLE api_keys ADD COLUMN allowed_networks TEXT;
      -- JSON object of the limits an operator (an admin, the CLI) set: the owner may tighten them,
      -- never loosen or clear them. The key's own columns hold what is enforced.
      ALTER TABLE api_keys ADD COLUMN operator_limits TEXT;
      DROP TRIGGER api_keys_update_revision;
      CREATE TRIGGER api_keys_update_revision
        AFTER UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget, allowed_networks, operator_limits ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
    `,
  },
  {
    version: 14,
    description: 'images: the image tokens each charge counted (at the image prices) and the images it delivered',
    sql: `
      ALTER TABLE charges ADD COLUMN image_input_tokens INTEGER NOT NULL DEFAULT 0 CHECK (image_input_tokens >= 0);
      ALTER TABLE charges ADD COLUMN image_output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (image_output_tokens >= 0);
      -- Images delivered (the Images API's data, or its completed stream events): what per-image prices charge.
      ALTER TABLE charges ADD COLUMN images INTEGER NOT NULL DEFAULT 0 CHECK (images >= 0);
      -- The summaries sum every token kind: the two new ones ride in their indexes as the others do.
      DROP INDEX charges_time_totals;
      CREATE INDEX charges_time_totals ON charges (
        created_at, account_id, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, image_input_tokens, image_output_tokens
      );
      DROP INDEX charges_account_totals;
      CREATE INDEX charges_account_totals ON charges (
        account_id, created_at, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, image_input_tokens, image_output_tokens
      );
    `,
  },
  { version: 15, ...SQLITE_REFUSALS_MIGRATION },
  {
    version: 16,
    description: 'card payments in any order: credits name their order, won disputes give back, each dispute is kept',
    rebuildsTables: true,
    sql: `
      -- A won dispute's give-back is a credit of its own kind (dispute_won), so the credits table is
      -- rebuilt with the wider CHECK; order_id ties a payment's credits to its order (backfilled from
      -- the orders' credit_id) so an order's ledger sums are one query.
      CREATE TABLE credits_new (
        id         TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount     INTEGER NOT NULL CHECK (amount > 0),
        kind       TEXT NOT NULL CHECK (kind IN ('topup', 'redemption', 'admin', 'dispute_won')),
        actor      TEXT,
        note       TEXT,
        created_at INTEGER NOT NULL,
        order_id   TEXT REFERENCES payment_orders (id)
      ) STRICT;
      INSERT INTO credits_new (rowid, id, account_id, amount, kind, actor, note, created_at, order_id)
        SELECT c.rowid, c.id, c.account_id, c.amount, c.kind, c.actor, c.note, c.created_at,
               (SELECT o.id FROM payment_orders o WHERE o.credit_id = c.id)
          FROM credits c;
      DROP TABLE credits;
      ALTER TABLE credits_new RENAME TO credits;
      CREATE INDEX credits_account_time ON credits (account_id, created_at);
      CREATE INDEX credits_order ON credits (order_id) WHERE order_id IS NOT NULL;

      -- JSON array of the order's disputes: [{"id": "dp_…", "amount_minor": 1000, "won": false}].
      -- A dispute debited before this version is kept as disputing the whole order (its minor amount
      -- was not kept): that never gives back more than the order holds.
      ALTER TABLE payment_orders ADD COLUMN disputes TEXT NOT NULL DEFAULT '[]';
      UPDATE payment_orders SET disputes = (
          SELECT json_group_array(json_object('id', d.source, 'amount_minor', payment_orders.amount_minor, 'won', json('false')))
            FROM debits d WHERE d.order_id = payment_orders.id AND d.kind = 'dispute')
        WHERE EXISTS (SELECT 1 FROM debits d WHERE d.order_id = payment_orders.id AND d.kind = 'dispute');
    `,
  },
  {
    version: 17,
    description: 'a Stripe event claimed by one handler and marked handled once it finished',
    sql: `
      -- claimed_at: when the handler now holding the event took it (its insert, or its takeover of a
      -- claim older than 60 s that never finished: that handler died). handled_at: when a handler
      -- finished it; until then a copy of the event is answered 409, so Stripe sends it again.
      ALTER TABLE payment_events ADD COLUMN claimed_at INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE payment_events ADD COLUMN handled_at INTEGER;
      -- Rows from before were handled as far as anything can tell now: they stay duplicates.
      UPDATE payment_events SET claimed_at = received_at, handled_at = received_at;
    `,
  },
  {
    version: 18,
    description: 'session budgets: the most one agent session may spend through a key or an account',
    sql: `
      -- Nano-units; NULL: no cap. A session is the client's session id (charges.session_id).
      ALTER TABLE accounts ADD COLUMN session_budget INTEGER CHECK (session_budget IS NULL OR session_budget > 0);
      ALTER TABLE api_keys ADD COLUMN session_budget INTEGER CHECK (session_budget IS NULL OR session_budget > 0);
      -- The session a hold was checked against a session budget for: it counts against that session until charged.
      ALTER TABLE holds ADD COLUMN session_id TEXT;
      -- A key's spend in one session (an account's is charges_account_session).
      CREATE INDEX charges_key_session ON charges (key_id, session_id) WHERE session_id IS NOT NULL;

      -- Authentication reads session budgets with the key: a change must reach every process's key cache.
      DROP TRIGGER accounts_update_revision;
      CREATE TRIGGER accounts_update_revision AFTER UPDATE OF id, name, email, role, disabled, budget, session_budget ON accounts
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      DROP TRIGGER api_keys_update_revision;
      CREATE TRIGGER api_keys_update_revision
        AFTER UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget, allowed_networks, operator_limits, session_budget ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
    `,
  },
  {
    version: 19,
    description: 'response and conversation ids relayed to each account, for responses.own_ids_only',
    sql: `
      -- One row per id a native Responses route relayed: the account it was relayed to may name it
      -- again (previous_response_id, conversation); any other account may not.
      CREATE TABLE relayed_responses (
        kind       TEXT NOT NULL CHECK (kind IN ('response', 'conversation')),
        id         TEXT NOT NULL,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (kind, id)
      ) STRICT;
    `,
  },
  {
    version: 20,
    description: 'adjustments: an administrator takes funds back with a note, a debit of no order',
    rebuildsTables: true,
    sql: `
      -- An adjustment is a debit that no card payment made: order_id becomes optional, the CHECK
      -- widens, and actor names who took it (as credits do); the table is rebuilt for both.
      CREATE TABLE debits_new (
        id         TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount     INTEGER NOT NULL CHECK (amount > 0),
        kind       TEXT NOT NULL CHECK (kind IN ('refund', 'dispute', 'adjustment')),
        order_id   TEXT REFERENCES payment_orders (id),
        source     TEXT NOT NULL UNIQUE,
        note       TEXT,
        created_at INTEGER NOT NULL,
        actor      TEXT,
        CHECK ((kind = 'adjustment') = (order_id IS NULL))
      ) STRICT;
      INSERT INTO debits_new (rowid, id, account_id, amount, kind, order_id, source, note, created_at)
        SELECT rowid, id, account_id, amount, kind, order_id, source, note, created_at FROM debits;
      DROP TABLE debits;
      ALTER TABLE debits_new RENAME TO debits;
      CREATE INDEX debits_account_time ON debits (account_id, created_at);
    `,
  },
  {
    version: 21,
    description: 'charges: what each request cost the operator upstream, beside what it charged',
    sql: `
      -- Nano-units at the answering route's cost; NULL where that cost is unknown (and on older rows).
      ALTER TABLE charges ADD COLUMN upstream_cost INTEGER CHECK (upstream_cost >= 0);
    `,
  },
  {
    version: 22,
    description: 'organisations: accounts people spend as members, with roles, invitations and limits per member',
    sql: `
      -- An organisation is an account nobody signs in to (it never has a password): its people act
      -- for it through memberships. Balance, ledger, budgets, keys and payments are an account's.
      ALTER TABLE accounts ADD COLUMN kind TEXT NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'organisation'));
      -- JSON OperatorLimits an operator set on the account: they bind every key it has or makes.
      ALTER TABLE accounts ADD COLUMN operator_limits TEXT;

      -- budget, models (JSON array) and rate_limits (JSON {rpm?, tpm?}): what the organisation lets
      -- this member spend through all of their keys in it; NULL: no limit of the organisation's.
      CREATE TABLE memberships (
        organisation_id TEXT NOT NULL REFERENCES accounts (id),
        account_id      TEXT NOT NULL REFERENCES accounts (id),
        role            TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'billing', 'member')),
        budget          TEXT,
        models          TEXT,
        rate_limits     TEXT,
        created_at      INTEGER NOT NULL,
        PRIMARY KEY (organisation_id, account_id)
      ) STRICT;
      CREATE INDEX memberships_account ON memberships (account_id);

      -- A one-time link, by the SHA-256 of its secret; invitee is the name or e-mail it was sent to.
      CREATE TABLE invitations (
        id              TEXT PRIMARY KEY,
        organisation_id TEXT NOT NULL REFERENCES accounts (id),
        hash            BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
        invitee         TEXT NOT NULL,
        role            TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'billing', 'member')),
        created_by      TEXT NOT NULL REFERENCES accounts (id),
        created_at      INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL,
        accepted_by     TEXT REFERENCES accounts (id),
        accepted_at     INTEGER,
        revoked_at      INTEGER
      ) STRICT;
      CREATE INDEX invitations_organisation ON invitations (organisation_id, created_at);

      -- The member who made a key inside an organisation (the key's account); NULL: the account's own.
      ALTER TABLE api_keys ADD COLUMN member_account_id TEXT REFERENCES accounts (id);
      CREATE INDEX api_keys_member ON api_keys (account_id, member_account_id) WHERE member_account_id IS NOT NULL;
      -- The member a charge (and the hold before it) was made for, from its key.
      ALTER TABLE charges ADD COLUMN member_account_id TEXT;
      CREATE INDEX charges_member_time ON charges (account_id, member_account_id, created_at) WHERE member_account_id IS NOT NULL;
      ALTER TABLE holds ADD COLUMN member_account_id TEXT;

      -- Authentication reads a key's member limits and its account's operator limits.
      CREATE TRIGGER memberships_insert_revision AFTER INSERT ON memberships
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER memberships_delete_revision AFTER DELETE ON memberships
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      CREATE TRIGGER memberships_update_revision AFTER UPDATE ON memberships
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      DROP TRIGGER accounts_update_revision;
      CREATE TRIGGER accounts_update_revision AFTER UPDATE OF id, name, email, role, disabled, budget, session_budget, kind, operator_limits ON accounts
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
      DROP TRIGGER api_keys_update_revision;
      CREATE TRIGGER api_keys_update_revision
        AFTER UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget, allowed_networks, operator_limits, session_budget, member_account_id ON api_keys
        BEGIN UPDATE keys_revision SET revision = revision + 1; END;
    `,
  },
  {
    version: 23,
    description: "the operator's usage summaries, upstream cost and margin included, answered from indexes alone",
    sql: `
      -- The operator's summaries sum upstream_cost beside cost: it rides in the two covering indexes
      -- as the other summed columns do, so those summaries read no table either.
      DROP INDEX charges_time_totals;
      CREATE INDEX charges_time_totals ON charges (
        created_at, account_id, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, image_input_tokens, image_output_tokens,
        upstream_cost
      );
      DROP INDEX charges_account_totals;
      CREATE INDEX charges_account_totals ON charges (
        account_id, created_at, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, image_input_tokens, image_output_tokens,
        upstream_cost
      );
    `,
  },
  {
    version: 24,
    description: 'monthly statements: issued once per account and month, numbered, never changed',
    sql: `
      -- document: the statement as issued (JSON), its figures frozen; hash: its SHA-256, hex.
      -- number is the operator's prefix, year and sequence; the sequence counts within the year.
      CREATE TABLE statements (
        id         TEXT PRIMARY KEY,
        number     TEXT NOT NULL UNIQUE,
        year       INTEGER NOT NULL,
        sequence   INTEGER NOT NULL CHECK (sequence >= 1),
        account_id TEXT NOT NULL REFERENCES accounts (id),
        month      TEXT NOT NULL CHECK (month GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]'),
        issued_at  INTEGER NOT NULL,
        document   TEXT NOT NULL,
        hash       TEXT NOT NULL CHECK (length(hash) = 64),
        UNIQUE (account_id, month),
        UNIQUE (year, sequence)
      ) STRICT;
      -- An issued statement never changes; a correction is a ledger entry on a later one.
      CREATE TRIGGER statements_never_updated BEFORE UPDATE ON statements
        BEGIN SELECT RAISE(ABORT, 'an issued statement never changes'); END;
      CREATE TRIGGER statements_never_deleted BEFORE DELETE ON statements
        BEGIN SELECT RAISE(ABORT, 'an issued statement never changes'); END;
    `,
  },
  {
    version: 25,
    description: 'transfers: credit moved between two accounts, a debit on one and a credit on the other',
    rebuildsTables: true,
    sql: `
      -- A transfer is two ledger entries of kind 'transfer' sharing its id (transfer_id): a debit on
      -- the source, a credit on the destination, written in one transaction. Both tables are rebuilt
      -- for the wider CHECKs; each transfer id appears once in each.
      CREATE TABLE credits_new (
        id          TEXT PRIMARY KEY,
        account_id  TEXT NOT NULL REFERENCES accounts (id),
        amount      INTEGER NOT NULL CHECK (amount > 0),
        kind        TEXT NOT NULL CHECK (kind IN ('topup', 'redemption', 'admin', 'dispute_won', 'transfer')),
        actor       TEXT,
        note        TEXT,
        created_at  INTEGER NOT NULL,
        order_id    TEXT REFERENCES payment_orders (id),
        transfer_id TEXT UNIQUE,
        CHECK ((kind = 'transfer') = (transfer_id IS NOT NULL))
      ) STRICT;
      INSERT INTO credits_new (rowid, id, account_id, amount, kind, actor, note, created_at, order_id)
        SELECT rowid, id, account_id, amount, kind, actor, note, created_at, order_id FROM credits;
      DROP TABLE credits;
      ALTER TABLE credits_new RENAME TO credits;
      CREATE INDEX credits_account_time ON credits (account_id, created_at);
      CREATE INDEX credits_order ON credits (order_id) WHERE order_id IS NOT NULL;

      CREATE TABLE debits_new (
        id          TEXT PRIMARY KEY,
        account_id  TEXT NOT NULL REFERENCES accounts (id),
        amount      INTEGER NOT NULL CHECK (amount > 0),
        kind        TEXT NOT NULL CHECK (kind IN ('refund', 'dispute', 'adjustment', 'transfer')),
        order_id    TEXT REFERENCES payment_orders (id),
        source      TEXT NOT NULL UNIQUE,
        note        TEXT,
        created_at  INTEGER NOT NULL,
        actor       TEXT,
        transfer_id TEXT UNIQUE,
        CHECK ((kind IN ('adjustment', 'transfer')) = (order_id IS NULL)),
        CHECK ((kind = 'transfer') = (transfer_id IS NOT NULL))
      ) STRICT;
      INSERT INTO debits_new (rowid, id, account_id, amount, kind, order_id, source, note, created_at, actor)
        SELECT rowid, id, account_id, amount, kind, order_id, source, note, created_at, actor FROM debits;
      DROP TABLE debits;
      ALTER TABLE debits_new RENAME TO debits;
      CREATE INDEX debits_account_time ON debits (account_id, created_at);
    `,
  },
  { version: 26, ...SQLITE_REFUSALS_MEMBER_MIGRATION },
];

const CREATE_TRACKING_TABLE = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
  ) STRICT`;

/**
 * Applies the migrations `db` has not seen yet and returns how many ran. Safe at every start and when
 * two processes start at once: each step takes the write lock (BEGIN IMMEDIATE) and re-checks whether
 * it is still pending before running.
 */
export function applySqliteMigrations(
  db: SqliteDatabase,
  migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS,
): number {
  db.exec(CREATE_TRACKING_TABLE);
  const isApplied = db.prepare<[number], number>('SELECT 1 FROM schema_migrations WHERE version = ?').pluck();
  const newest = db.prepare<[], number | null>('SELECT max(version) FROM schema_migrations').pluck();
  const record = db.prepare<[number, number]>('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)');

  // A store written by a newer Tollgate has tables this build does not know; refuse rather than guess.
  const known = migrations.length === 0 ? 0 : migrations[migrations.length - 1].version;
  const found = newest.get() ?? 0;
  if (found > known) {
    throw new Error(`the store's schema is at version ${found}, newer than this build knows (${known}); upgrade Tollgate`);
  }

  let applied = 0;
  for (const migration of migrations) {
    const step = db.transaction(() => {
      if (isApplied.get(migration.version) !== undefined) return;
      db.exec(migration.sql);
      if (migration.rebuildsTables === true && db.prepare('PRAGMA foreign_key_check').all().length > 0) {
        throw new Error(`migration ${migration.version} left a broken reference; nothing was changed`);
      }
      record.run(migration.version, Date.now());
      applied += 1;
    });
    // PRAGMA foreign_keys cannot change inside a transaction, so a rebuild turns them off around it.
    const foreignKeys = migration.rebuildsTables === true ? Number(db.prepare<[], number>('PRAGMA foreign_keys').pluck().get() ?? 0) : 0;
    if (foreignKeys === 1) db.exec('PRAGMA foreign_keys = OFF');
    try {
      step.immediate();
    } finally {
      if (foreignKeys === 1) db.exec('PRAGMA foreign_keys = ON');
    }
  }
  return applied;
}
