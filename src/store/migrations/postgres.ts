/**
 * The PostgreSQL schema, as an ordered list of migrations mirroring the SQLite ones (same tables,
 * columns and constraints), plus the trigger that tells other instances when keys or accounts change.
 * Each migration runs once, inside its own transaction, and is recorded in `schema_migrations`. To
 * change the schema, append an entry; never edit one that has shipped.
 */
import type { ClientBase } from 'pg';
import { POSTGRES_AUDIT_MIGRATION } from './audit';
import { POSTGRES_REFUSALS_MEMBER_MIGRATION, POSTGRES_REFUSALS_MIGRATION } from './refusals';

/** One schema step. `version` is its position in the list, starting at 1. */
export interface PostgresMigration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

/** The channel the key-change trigger notifies; `PostgresStore` listens on it. */
export const KEYS_CHANGED_CHANNEL = 'tollgate_keys_changed';

/**
 * Every migration, oldest first. Dates are TIMESTAMPTZ (always written from the application's clock,
 * as in SQLite, so that holds and codes expire by one clock). `seq` columns give rows made in the same
 * millisecond a stable order, as SQLite's rowid does.
 */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    description: 'accounts and API keys',
    sql: `
      CREATE TABLE accounts (
        id         TEXT PRIMARY KEY,
        seq        BIGINT GENERATED ALWAYS AS IDENTITY,
        name       TEXT NOT NULL UNIQUE,
        role       TEXT NOT NULL CHECK (role IN ('admin', 'user')),
        disabled   BOOLEAN NOT NULL DEFAULT false,
        created_at TIMESTAMPTZ NOT NULL
      );

      CREATE TABLE api_keys (
        id         TEXT PRIMARY KEY,
        seq        BIGINT GENERATED ALWAYS AS IDENTITY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        name       TEXT,
        hash       BYTEA NOT NULL CHECK (octet_length(hash) = 32),
        prefix     TEXT NOT NULL,
        last4      TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        revoked_at TIMESTAMPTZ,
        expires_at TIMESTAMPTZ
      );

      -- Authentication looks keys up by hash on every uncached request.
      CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
      CREATE INDEX api_keys_account ON api_keys (account_id);
    `,
  },
  {
    version: 2,
    description: 'balances, holds, the ledger (charges and credits), key limits, redemption codes',
    sql: `
      -- Money columns are BIGINT nano-units. balance = credits - charges, kept by the transactions
      -- that append to the ledger; held = the sum of the account's open holds.
      ALTER TABLE accounts ADD COLUMN balance BIGINT NOT NULL DEFAULT 0 CHECK (balance >= 0);
      ALTER TABLE accounts ADD COLUMN held BIGINT NOT NULL DEFAULT 0 CHECK (held >= 0);

      ALTER TABLE api_keys ADD COLUMN spend_limit BIGINT CHECK (spend_limit IS NULL OR spend_limit >= 0);
      ALTER TABLE api_keys ADD COLUMN spent BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0);
      ALTER TABLE api_keys ADD COLUMN held BIGINT NOT NULL DEFAULT 0 CHECK (held >= 0);
      -- Model ids the key may use, or NULL for every model.
      ALTER TABLE api_keys ADD COLUMN models TEXT[];

      CREATE TABLE holds (
        request_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        key_id     TEXT NOT NULL REFERENCES api_keys (id),
        amount     BIGINT NOT NULL CHECK (amount >= 0),
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX holds_expiry ON holds (expires_at);

      -- Append-only: one row per request id, never updated.
      CREATE TABLE charges (
        request_id         TEXT PRIMARY KEY,
        seq                BIGINT GENERATED ALWAYS AS IDENTITY,
        account_id         TEXT NOT NULL REFERENCES accounts (id),
        key_id             TEXT NOT NULL REFERENCES api_keys (id),
        model              TEXT NOT NULL,
        provider           TEXT,
        endpoint           TEXT NOT NULL,
        input_tokens       INTEGER NOT NULL CHECK (input_tokens >= 0),
        cache_write_tokens INTEGER NOT NULL CHECK (cache_write_tokens >= 0),
        cache_read_tokens  INTEGER NOT NULL CHECK (cache_read_tokens >= 0),
        output_tokens      INTEGER NOT NULL CHECK (output_tokens >= 0),
        cost               BIGINT NOT NULL CHECK (cost >= 0),
        usage_source       TEXT NOT NULL CHECK (usage_source IN ('upstream', 'estimated', 'partial', 'none')),
        status             INTEGER NOT NULL,
        outcome            TEXT NOT NULL CHECK (outcome IN ('delivered', 'aborted', 'failed')),
        latency_ms         INTEGER NOT NULL,
        created_at         TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX charges_account_time ON charges (account_id, created_at);
      CREATE INDEX charges_key_time ON charges (key_id, created_at);

      -- Append-only: top-ups, redemptions and admin credits, with who and why.
      CREATE TABLE credits (
        id         TEXT PRIMARY KEY,
        seq        BIGINT GENERATED ALWAYS AS IDENTITY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount     BIGINT NOT NULL CHECK (amount > 0),
        kind       TEXT NOT NULL CHECK (kind IN ('topup', 'redemption', 'admin')),
        actor      TEXT,
        note       TEXT,
        created_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX credits_account_time ON credits (account_id, created_at);

      CREATE TABLE redemption_codes (
        id          TEXT PRIMARY KEY,
        seq         BIGINT GENERATED ALWAYS AS IDENTITY,
        hash        BYTEA NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
        amount      BIGINT NOT NULL CHECK (amount > 0),
        created_at  TIMESTAMPTZ NOT NULL,
        created_by  TEXT,
        expires_at  TIMESTAMPTZ,
        redeemed_by TEXT REFERENCES accounts (id),
        redeemed_at TIMESTAMPTZ,
        credit_id   TEXT REFERENCES credits (id)
      );
    `,
  },
  {
    version: 3,
    description: 'notify listeners when keys or accounts change',
    // Only the columns authentication reads: holds and charges update balance, held and spent on every
    // request, and a notification for those would flush every instance's auth cache all the time.
    // A trigger (rather than a NOTIFY in the store's code) also covers the CLI and hand-made SQL.
    sql: `
      CREATE FUNCTION tollgate_notify_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('${KEYS_CHANGED_CHANNEL}', TG_TABLE_NAME);
        RETURN NULL;
      END $$;

      CREATE TRIGGER accounts_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, name, role, disabled ON accounts
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
      CREATE TRIGGER api_keys_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
    `,
  },
  {
    version: 4,
    description: 'hold funds in one statement',
    // The hold as one call, so it costs one round trip instead of a transaction of four or five. The
    // statement is atomic: a duplicate request id (unique violation) undoes the held amounts too.
    // Locks the account before the key, the order every ledger transaction uses. `refused` is NULL
    // when the hold was taken; otherwise it names the limit and `available` what that limit has left.
    sql: `
      CREATE FUNCTION tollgate_hold_funds(
        p_request_id TEXT, p_account_id TEXT, p_key_id TEXT, p_amount BIGINT, p_created_at TIMESTAMPTZ, p_expires_at TIMESTAMPTZ
      ) RETURNS TABLE (refused TEXT, available BIGINT) LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE accounts SET held = held + p_amount WHERE id = p_account_id AND balance - held >= p_amount;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'balance'::TEXT,
            GREATEST(COALESCE((SELECT a.balance - a.held FROM accounts a WHERE a.id = p_account_id), 0), 0);
          RETURN;
        END IF;
        UPDATE api_keys SET held = held + p_amount
         WHERE id = p_key_id AND (spend_limit IS NULL OR spend_limit - spent - held >= p_amount);
        IF NOT FOUND THEN
          -- Undo the account's part: the whole hold happens or none of it does.
          UPDATE accounts SET held = held - p_amount WHERE id = p_account_id;
          RETURN QUERY SELECT 'key_spend_limit'::TEXT,
            GREATEST(COALESCE((SELECT k.spend_limit - k.spent - k.held FROM api_keys k WHERE k.id = p_key_id), 0), 0);
          RETURN;
        END IF;
        INSERT INTO holds (request_id, account_id, key_id, amount, created_at, expires_at)
        VALUES (p_request_id, p_account_id, p_key_id, p_amount, p_created_at, p_expires_at);
        RETURN QUERY SELECT NULL::TEXT, NULL::BIGINT;
      END $$;
    `,
  },
  {
    version: 5,
    description: 'console: account e-mails and passwords, per-key rate limits, sessions and management tokens',
    // E-mails are stored lower-cased (the CHECK keeps hand-made SQL to that too), so the plain UNIQUE
    // index makes them unique case-insensitively and a login looks them up with lower($1).
    // The key-change triggers are re-created to cover the new columns authentication reads: the
    // account's e-mail (part of the cached identity) and the key's rate limits. A password is not
    // read by key authentication, so changing one does not flush every instance's auth cache.
    sql: `
      ALTER TABLE accounts ADD COLUMN email TEXT CHECK (email = lower(email));
      ALTER TABLE accounts ADD COLUMN password_hash TEXT;
      CREATE UNIQUE INDEX accounts_email ON accounts (email);

      -- JSON text of the key's own rate limits ({"rpm":…,"tpm":…,"concurrency":…}), or NULL for none.
      ALTER TABLE api_keys ADD COLUMN rate_limits TEXT;

      -- Console logins (kind 'session') and management tokens (kind 'token'), by the SHA-256 of their secret.
      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY,
        seq        BIGINT GENERATED ALWAYS AS IDENTITY,
        hash       BYTEA NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind       TEXT NOT NULL CHECK (kind IN ('session', 'token')),
        name       TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ
      );
      CREATE INDEX sessions_account_kind ON sessions (account_id, kind);
      CREATE INDEX sessions_expiry ON sessions (expires_at);

      DROP TRIGGER accounts_changed ON accounts;
      CREATE TRIGGER accounts_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, name, email, role, disabled ON accounts
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
      DROP TRIGGER api_keys_changed ON api_keys;
      CREATE TRIGGER api_keys_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
    `,
  },
  {
    version: 6,
    description: 'exact billing: overage below zero, 1-hour cache writes, server-tool calls, the prices and hold of each charge',
    // A balance may go below zero by a charge's recorded overage (the upstream billed more than was
    // held), so its CHECK goes; holds still need balance - held >= amount. Token counts become BIGINT:
    // one absurd usage report must not overflow a column and stall the ledger writer.
    sql: `
      ALTER TABLE accounts DROP CONSTRAINT IF EXISTS accounts_balance_check;

      ALTER TABLE charges ALTER COLUMN input_tokens TYPE BIGINT;
      ALTER TABLE charges ALTER COLUMN cache_write_tokens TYPE BIGINT;
      ALTER TABLE charges ALTER COLUMN cache_read_tokens TYPE BIGINT;
      ALTER TABLE charges ALTER COLUMN output_tokens TYPE BIGINT;
      ALTER TABLE charges ADD COLUMN cache_write_1h_tokens BIGINT NOT NULL DEFAULT 0 CHECK (cache_write_1h_tokens >= 0);
      -- The client's own x-request-id, for correlation; request_id is always Tollgate's.
      ALTER TABLE charges ADD COLUMN client_request_id TEXT;
      -- JSON object of tool name -> calls billed per call (web_search ...).
      ALTER TABLE charges ADD COLUMN tool_calls TEXT NOT NULL DEFAULT '{}';
      ALTER TABLE charges ADD COLUMN held BIGINT NOT NULL DEFAULT 0 CHECK (held >= 0);
      ALTER TABLE charges ADD COLUMN overage BIGINT NOT NULL DEFAULT 0 CHECK (overage >= 0);
      ALTER TABLE charges ADD COLUMN unbilled BIGINT NOT NULL DEFAULT 0 CHECK (unbilled >= 0);
      -- JSON of the per-kind prices the cost was computed at (nano-units); NULL for free models and older rows.
      ALTER TABLE charges ADD COLUMN prices TEXT;
    `,
  },
  { version: 7, ...POSTGRES_AUDIT_MIGRATION },
  {
    version: 8,
    description: 'charges the store refused, set aside with the error instead of blocking the ledger writer',
    sql: `
      -- No foreign keys and no CHECKs: whatever the ledger refused must fit here.
      CREATE TABLE set_aside_charges (
        request_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        error      TEXT NOT NULL,
        record     TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
      );
    `,
  },
  {
    version: 9,
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
      ALTER TABLE charges ADD COLUMN ttfb_ms INT;
      ALTER TABLE charges ADD COLUMN user_agent TEXT;
      ALTER TABLE charges ADD COLUMN origin TEXT CHECK (origin IS NULL OR origin IN ('playground'));
      -- The operator's summaries across accounts read a time range of every account.
      CREATE INDEX charges_time ON charges (created_at);
      -- An account's sessions, and one session's requests.
      CREATE INDEX charges_account_session ON charges (account_id, session_id, created_at) WHERE session_id IS NOT NULL;
    `,
  },
  {
    version: 10,
    description: 'the service level each charge was priced at: the tier its reply reported, and whether long-context rates applied',
    sql: `
      -- NULL: the reply named no tier (and every row older than this migration).
      ALTER TABLE charges ADD COLUMN service_tier TEXT;
      ALTER TABLE charges ADD COLUMN long_context BOOLEAN NOT NULL DEFAULT false;
    `,
  },
  {
    version: 11,
    description: 'card payments: orders, the Stripe events seen, debits (refunds, disputes), payment profiles',
    sql: `
      -- One row per top-up asked of Stripe. Amounts: amount_minor in the currency's minor unit (what
      -- Stripe charges), credit_amount in nano-units (what the ledger gets), fixed when the order is made.
      -- credit_id is set once, by the transaction that writes the credit: the exactly-once guard.
      CREATE TABLE payment_orders (
        id                TEXT PRIMARY KEY,
        seq               BIGINT GENERATED ALWAYS AS IDENTITY,
        account_id        TEXT NOT NULL REFERENCES accounts (id),
        kind              TEXT NOT NULL CHECK (kind IN ('checkout', 'auto_recharge')),
        status            TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'failed', 'expired')),
        currency          TEXT NOT NULL,
        amount_minor      BIGINT NOT NULL CHECK (amount_minor > 0),
        credit_amount     BIGINT NOT NULL CHECK (credit_amount > 0),
        session_id        TEXT UNIQUE,
        payment_intent_id TEXT UNIQUE,
        credit_id         TEXT UNIQUE REFERENCES credits (id),
        refunded_minor    BIGINT NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
        disputed          BOOLEAN NOT NULL DEFAULT false,
        receipt_url       TEXT,
        error             TEXT,
        created_at        TIMESTAMPTZ NOT NULL,
        updated_at        TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX payment_orders_account ON payment_orders (account_id, created_at);
      CREATE INDEX payment_orders_status ON payment_orders (status, created_at);

      -- Append-only: funds taken back from a paid order. source names the Stripe object and state it
      -- came from, once: a webhook delivered twice finds its debit already there.
      CREATE TABLE debits (
        id         TEXT PRIMARY KEY,
        seq        BIGINT GENERATED ALWAYS AS IDENTITY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount     BIGINT NOT NULL CHECK (amount > 0),
        kind       TEXT NOT NULL CHECK (kind IN ('refund', 'dispute')),
        order_id   TEXT NOT NULL REFERENCES payment_orders (id),
        source     TEXT NOT NULL UNIQUE,
        note       TEXT,
        created_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX debits_account_time ON debits (account_id, created_at);

      -- Every Stripe event handled, by Stripe's id: a repeat is answered without being handled again.
      CREATE TABLE payment_events (
        id          TEXT PRIMARY KEY,
        type        TEXT NOT NULL,
        order_id    TEXT,
        received_at TIMESTAMPTZ NOT NULL
      );

      -- Per account: the Stripe customer and saved card, auto-recharge settings and state, the dispute flag.
      CREATE TABLE payment_profiles (
        account_id          TEXT PRIMARY KEY REFERENCES accounts (id),
        customer_id         TEXT,
        payment_method_id   TEXT,
        auto_recharge       BOOLEAN NOT NULL DEFAULT false,
        threshold           BIGINT NOT NULL DEFAULT 0 CHECK (threshold >= 0),
        recharge_minor      INTEGER NOT NULL DEFAULT 0 CHECK (recharge_minor >= 0),
        monthly_cap_minor   INTEGER NOT NULL DEFAULT 0 CHECK (monthly_cap_minor >= 0),
        failures            INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
        last_error          TEXT,
        needs_action        BOOLEAN NOT NULL DEFAULT false,
        flagged_at          TIMESTAMPTZ,
        flag_reason         TEXT,
        updated_at          TIMESTAMPTZ NOT NULL
      );

      -- Background work one instance does at a time (the reconcile job): held until expires_at.
      CREATE TABLE payment_leases (
        name       TEXT PRIMARY KEY,
        holder     TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
      );
    `,
  },
  {
    version: 12,
    description: 'budgets per period on keys and accounts, and the alerts they raise',
    sql: `
      -- JSON {"amount": nano-units as text, "period": "day"|"week"|"month", "timezone": IANA name}, or NULL.
      ALTER TABLE accounts ADD COLUMN budget TEXT;
      ALTER TABLE api_keys ADD COLUMN budget TEXT;

      -- Authentication reads budgets with the key: a change must reach every instance's key cache.
      DROP TRIGGER accounts_changed ON accounts;
      CREATE TRIGGER accounts_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, name, email, role, disabled, budget ON accounts
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
      DROP TRIGGER api_keys_changed ON api_keys;
      CREATE TRIGGER api_keys_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();

      -- One row per alert that fired; once is unique, so racing instances fire each alert once.
      CREATE TABLE budget_alerts (
        id           TEXT PRIMARY KEY,
        seq          BIGINT GENERATED ALWAYS AS IDENTITY,
        once         TEXT NOT NULL UNIQUE,
        account_id   TEXT NOT NULL REFERENCES accounts (id),
        key_id       TEXT REFERENCES api_keys (id),
        kind         TEXT NOT NULL CHECK (kind IN ('budget', 'balance')),
        body         TEXT NOT NULL,
        created_at   TIMESTAMPTZ NOT NULL,
        delivered_at TIMESTAMPTZ,
        attempts     INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX budget_alerts_account_time ON budget_alerts (account_id, created_at);
      CREATE INDEX budget_alerts_undelivered ON budget_alerts (created_at) WHERE delivered_at IS NULL;
    `,
  },
  {
    version: 13,
    description: 'access: names unique whatever their case, credentials that end, second factors, key networks and operator limits',
    sql: `
      -- Names that differ only in case: the oldest account keeps its name; each later one is renamed
      -- to <name>-<seq> (nothing is deleted; its keys, balance and e-mail login are untouched, and
      -- "tollgate account list" shows the new name). Then the index makes such clashes impossible.
      UPDATE accounts SET name = name || '-' || seq
       WHERE EXISTS (SELECT 1 FROM accounts older WHERE lower(older.name) = lower(accounts.name) AND older.seq < accounts.seq);
      CREATE UNIQUE INDEX accounts_name_nocase ON accounts (lower(name));

      -- When a session or token was last used, and the browser (or client) that signed in.
      ALTER TABLE sessions ADD COLUMN last_used_at TIMESTAMPTZ;
      ALTER TABLE sessions ADD COLUMN user_agent TEXT;
      -- Management tokens made before tokens expired: they end 90 days after the upgrade.
      UPDATE sessions SET expires_at = now() + interval '90 days' WHERE kind = 'token' AND expires_at IS NULL;

      -- TOTP (RFC 6238): the shared secret (base32), the last time step accepted (a code is never
      -- taken twice), and whether enrolment was confirmed with a first code.
      CREATE TABLE second_factors (
        account_id   TEXT PRIMARY KEY REFERENCES accounts (id),
        secret       TEXT NOT NULL,
        confirmed_at TIMESTAMPTZ,
        last_step    BIGINT,
        created_at   TIMESTAMPTZ NOT NULL
      );
      -- One-time recovery codes, by the SHA-256 of their text.
      CREATE TABLE recovery_codes (
        account_id TEXT NOT NULL REFERENCES accounts (id),
        hash       BYTEA NOT NULL CHECK (octet_length(hash) = 32),
        used_at    TIMESTAMPTZ,
        PRIMARY KEY (account_id, hash)
      );

      -- JSON array of CIDRs the key's owner allows requests from; NULL: anywhere.
      ALTER TABLE api_keys ADD COLUMN allowed_networks TEXT;
      -- JSON object of the limits an operator (an admin, the CLI) set: the owner may tighten them,
      -- never loosen or clear them. The key's own columns hold what is enforced.
      ALTER TABLE api_keys ADD COLUMN operator_limits TEXT;
      DROP TRIGGER api_keys_changed ON api_keys;
      CREATE TRIGGER api_keys_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget, allowed_networks, operator_limits ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
    `,
  },
  {
    version: 14,
    description: 'images: the image tokens each charge counted (at the image prices) and the images it delivered',
    sql: `
      ALTER TABLE charges ADD COLUMN image_input_tokens BIGINT NOT NULL DEFAULT 0 CHECK (image_input_tokens >= 0);
      ALTER TABLE charges ADD COLUMN image_output_tokens BIGINT NOT NULL DEFAULT 0 CHECK (image_output_tokens >= 0);
      -- Images delivered (the Images API's data, or its completed stream events): what per-image prices charge.
      ALTER TABLE charges ADD COLUMN images INTEGER NOT NULL DEFAULT 0 CHECK (images >= 0);
    `,
  },
  { version: 15, ...POSTGRES_REFUSALS_MIGRATION },
  {
    version: 16,
    description: 'card payments in any order: credits name their order, won disputes give back, each dispute is kept',
    sql: `
      -- A won dispute's give-back is a credit of its own kind; order_id ties a payment's credits to
      -- its order (backfilled from the orders' credit_id) so an order's ledger sums are one query.
      ALTER TABLE credits DROP CONSTRAINT credits_kind_check;
      ALTER TABLE credits ADD CONSTRAINT credits_kind_check CHECK (kind IN ('topup', 'redemption', 'admin', 'dispute_won'));
      ALTER TABLE credits ADD COLUMN order_id TEXT REFERENCES payment_orders (id);
      UPDATE credits c SET order_id = o.id FROM payment_orders o WHERE o.credit_id = c.id;
      CREATE INDEX credits_order ON credits (order_id) WHERE order_id IS NOT NULL;

      -- JSON array of the order's disputes: [{"id": "dp_…", "amount_minor": 1000, "won": false}].
      -- A dispute debited before this version is kept as disputing the whole order (its minor amount
      -- was not kept): that never gives back more than the order holds.
      ALTER TABLE payment_orders ADD COLUMN disputes TEXT NOT NULL DEFAULT '[]';
      UPDATE payment_orders o SET disputes = (
          SELECT json_agg(json_build_object('id', d.source, 'amount_minor', o.amount_minor, 'won', false))::text
            FROM debits d WHERE d.order_id = o.id AND d.kind = 'dispute')
        WHERE EXISTS (SELECT 1 FROM debits d WHERE d.order_id = o.id AND d.kind = 'dispute');
    `,
  },
  {
    version: 17,
    description: 'a Stripe event claimed by one handler and marked handled once it finished',
    sql: `
      -- claimed_at: when the handler now holding the event took it (its insert, or its takeover of a
      -- claim older than 60 s that never finished: that handler died). handled_at: when a handler
      -- finished it; until then a copy of the event is answered 409, so Stripe sends it again.
      ALTER TABLE payment_events ADD COLUMN claimed_at TIMESTAMPTZ, ADD COLUMN handled_at TIMESTAMPTZ;
      -- Rows from before were handled as far as anything can tell now: they stay duplicates.
      UPDATE payment_events SET claimed_at = received_at, handled_at = received_at;
      ALTER TABLE payment_events ALTER COLUMN claimed_at SET NOT NULL;
    `,
  },
  {
    version: 18,
    description: 'session budgets: the most one agent session may spend through a key or an account',
    sql: `
      -- Nano-units; NULL: no cap. A session is the client's session id (charges.session_id).
      ALTER TABLE accounts ADD COLUMN session_budget BIGINT CHECK (session_budget IS NULL OR session_budget > 0);
      ALTER TABLE api_keys ADD COLUMN session_budget BIGINT CHECK (session_budget IS NULL OR session_budget > 0);
      -- The session a hold was checked against a session budget for: it counts against that session until charged.
      ALTER TABLE holds ADD COLUMN session_id TEXT;
      -- A key's spend in one session (an account's is charges_account_session).
      CREATE INDEX charges_key_session ON charges (key_id, session_id) WHERE session_id IS NOT NULL;

      -- Authentication reads session budgets with the key: a change must reach every instance's key cache.
      DROP TRIGGER accounts_changed ON accounts;
      CREATE TRIGGER accounts_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, name, email, role, disabled, budget, session_budget ON accounts
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
      DROP TRIGGER api_keys_changed ON api_keys;
      CREATE TRIGGER api_keys_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget, allowed_networks, operator_limits, session_budget ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
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
        created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (kind, id)
      );
    `,
  },
  {
    version: 20,
    description: 'adjustments: an administrator takes funds back with a note, a debit of no order',
    sql: `
      -- An adjustment is a debit that no card payment made: order_id becomes optional, the CHECK
      -- widens, and actor names who took it (as credits do).
      ALTER TABLE debits DROP CONSTRAINT debits_kind_check;
      ALTER TABLE debits ADD CONSTRAINT debits_kind_check CHECK (kind IN ('refund', 'dispute', 'adjustment'));
      ALTER TABLE debits ALTER COLUMN order_id DROP NOT NULL;
      ALTER TABLE debits ADD COLUMN actor TEXT;
      ALTER TABLE debits ADD CONSTRAINT debits_order_check CHECK ((kind = 'adjustment') = (order_id IS NULL));
    `,
  },
  {
    version: 21,
    description: 'charges: what each request cost the operator upstream, beside what it charged',
    sql: `
      -- Nano-units at the answering route's cost; NULL where that cost is unknown (and on older rows).
      ALTER TABLE charges ADD COLUMN upstream_cost BIGINT CHECK (upstream_cost >= 0);
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
        created_at      TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (organisation_id, account_id)
      );
      CREATE INDEX memberships_account ON memberships (account_id);

      -- A one-time link, by the SHA-256 of its secret; invitee is the name or e-mail it was sent to.
      CREATE TABLE invitations (
        id              TEXT PRIMARY KEY,
        organisation_id TEXT NOT NULL REFERENCES accounts (id),
        hash            BYTEA NOT NULL UNIQUE CHECK (length(hash) = 32),
        invitee         TEXT NOT NULL,
        role            TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'billing', 'member')),
        created_by      TEXT NOT NULL REFERENCES accounts (id),
        created_at      TIMESTAMPTZ NOT NULL,
        expires_at      TIMESTAMPTZ NOT NULL,
        accepted_by     TEXT REFERENCES accounts (id),
        accepted_at     TIMESTAMPTZ,
        revoked_at      TIMESTAMPTZ
      );
      CREATE INDEX invitations_organisation ON invitations (organisation_id, created_at);

      -- The member who made a key inside an organisation (the key's account); NULL: the account's own.
      ALTER TABLE api_keys ADD COLUMN member_account_id TEXT REFERENCES accounts (id);
      CREATE INDEX api_keys_member ON api_keys (account_id, member_account_id) WHERE member_account_id IS NOT NULL;
      -- The member a charge (and the hold before it) was made for, from its key.
      ALTER TABLE charges ADD COLUMN member_account_id TEXT;
      CREATE INDEX charges_member_time ON charges (account_id, member_account_id, created_at) WHERE member_account_id IS NOT NULL;
      ALTER TABLE holds ADD COLUMN member_account_id TEXT;

      -- Authentication reads a key's member limits and its account's operator limits.
      CREATE TRIGGER memberships_changed
        AFTER INSERT OR DELETE OR UPDATE ON memberships
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
      DROP TRIGGER accounts_changed ON accounts;
      CREATE TRIGGER accounts_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, name, email, role, disabled, budget, session_budget, kind, operator_limits ON accounts
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
      DROP TRIGGER api_keys_changed ON api_keys;
      CREATE TRIGGER api_keys_changed
        AFTER INSERT OR DELETE OR UPDATE OF id, account_id, hash, revoked_at, expires_at, spend_limit, models, rate_limits, budget, allowed_networks, operator_limits, session_budget, member_account_id ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys_changed();
    `,
  },
  {
    version: 23,
    description: "the operator's usage summaries, upstream cost and margin included, answered from indexes alone",
    sql: `
      -- Every column a usage summary groups or sums rides in the index its range is read through
      -- (INCLUDE: carried, not ordered by), so a summary is an index-only scan wherever the visibility
      -- map lets it be (autovacuum keeps it current). Each replaces the index with the same key, so a
      -- charge updates as many indexes as before, wider ones. The same names as SQLite's.
      -- The operator's summaries across accounts: a time range of every account.
      CREATE INDEX charges_time_totals ON charges (created_at) INCLUDE (
        account_id, key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, image_input_tokens, image_output_tokens,
        upstream_cost
      );
      DROP INDEX charges_time;
      -- An account's own summaries and spend, and its charges listed by time.
      CREATE INDEX charges_account_totals ON charges (account_id, created_at) INCLUDE (
        key_id, model, provider, status, cost,
        input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, image_input_tokens, image_output_tokens,
        upstream_cost
      );
      DROP INDEX charges_account_time;
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
        month      TEXT NOT NULL CHECK (month ~ '^[0-9]{4}-[0-1][0-9]$'),
        issued_at  TIMESTAMPTZ NOT NULL,
        document   TEXT NOT NULL,
        hash       TEXT NOT NULL CHECK (length(hash) = 64),
        UNIQUE (account_id, month),
        UNIQUE (year, sequence)
      );
      -- An issued statement never changes; a correction is a ledger entry on a later one.
      CREATE FUNCTION statements_never_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'an issued statement never changes'; END $$;
      CREATE TRIGGER statements_never_change BEFORE UPDATE OR DELETE ON statements
        FOR EACH ROW EXECUTE FUNCTION statements_never_change();
    `,
  },
  {
    version: 25,
    description: 'transfers: credit moved between two accounts, a debit on one and a credit on the other',
    sql: `
      -- A transfer is two ledger entries of kind 'transfer' sharing its id (transfer_id): a debit on
      -- the source, a credit on the destination, written in one transaction; each transfer id
      -- appears once in each table.
      ALTER TABLE credits DROP CONSTRAINT credits_kind_check;
      ALTER TABLE credits ADD CONSTRAINT credits_kind_check CHECK (kind IN ('topup', 'redemption', 'admin', 'dispute_won', 'transfer'));
      ALTER TABLE credits ADD COLUMN transfer_id TEXT UNIQUE;
      ALTER TABLE credits ADD CONSTRAINT credits_transfer_check CHECK ((kind = 'transfer') = (transfer_id IS NOT NULL));
      ALTER TABLE debits DROP CONSTRAINT debits_kind_check;
      ALTER TABLE debits ADD CONSTRAINT debits_kind_check CHECK (kind IN ('refund', 'dispute', 'adjustment', 'transfer'));
      ALTER TABLE debits DROP CONSTRAINT debits_order_check;
      ALTER TABLE debits ADD CONSTRAINT debits_order_check CHECK ((kind IN ('adjustment', 'transfer')) = (order_id IS NULL));
      ALTER TABLE debits ADD COLUMN transfer_id TEXT UNIQUE;
      ALTER TABLE debits ADD CONSTRAINT debits_transfer_check CHECK ((kind = 'transfer') = (transfer_id IS NOT NULL));
    `,
  },
  { version: 26, ...POSTGRES_REFUSALS_MEMBER_MIGRATION },
];

/**
 * Any constant shared by every Tollgate instance: two instances starting at once queue on this lock,
 * so the second finds the first's migrations applied instead of racing to create the same tables.
 */
const MIGRATION_LOCK_KEY = 0x746f6c6c; // "toll"

const CREATE_TRACKING_TABLE = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL
  )`;

/**
 * Applies the migrations the database has not seen yet and returns how many ran. Each step is one
 * transaction that first takes the migration lock, then re-checks whether the step is still pending.
 */
export async function applyPostgresMigrations(
  client: ClientBase,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
): Promise<number> {
  const known = migrations.length === 0 ? 0 : migrations[migrations.length - 1].version;
  await inLockedTransaction(client, async () => {
    await client.query(CREATE_TRACKING_TABLE);
    // A store written by a newer Tollgate has tables this build does not know; refuse rather than guess.
    const { rows } = await client.query<{ newest: number | null }>('SELECT max(version) AS newest FROM schema_migrations');
    const found = rows[0]?.newest ?? 0;
    if (found > known) {
      throw new Error(`the store's schema is at version ${found}, newer than this build knows (${known}); upgrade Tollgate`);
    }
  });

  let applied = 0;
  for (const migration of migrations) {
    await inLockedTransaction(client, async () => {
      const done = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version]);
      if (done.rowCount !== 0) return;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [migration.version, new Date()]);
      applied += 1;
    });
  }
  return applied;
}

async function inLockedTransaction(client: ClientBase, work: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await work();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
