/**
 * The books the simulator drives, each behind one small interface, in-process: the real balance book
 * (`LocalBook`, `StoreBook`, or two `RedisBook` instances), the real store, a real `LedgerWriter` per
 * instance wired as the billing plugin wires it, and the real `Payments` webhook handler. The writer
 * writes only when told (`drain`), so one seed is one interleaving. Faults go in where the process
 * would meet them: a store write that fails, a writer whose store stalls, Redis restarting empty, an
 * instance stopped by SIGTERM (drained, closed, and started again).
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { BalanceBook } from '../../src/billing/book';
import type { TransferResult } from '../../src/store/transfers';
import { PeriodCache } from '../../src/billing/budget-period';
import { budgetChecks } from '../../src/billing/budgets';
import { openBookWriter } from '../../src/billing/book-writer';
import type { LedgerWriter } from '../../src/billing/ledger-writer';
import { LocalBook } from '../../src/billing/local-book';
import { openRedisBook } from '../../src/billing/redis-book';
import { StoreBook } from '../../src/billing/store-book';
import { PaymentMetrics } from '../../src/metrics/payment-metrics';
import { Payments } from '../../src/payments/payments';
import { openStore } from '../../src/store/open';
import { marginOf } from '../../src/billing/money';
import { memberBudgetId } from '../../src/store/budget-owner';
import type { Account, ApiKeyRecord, BudgetCheck, ChargeRecord, HoldResult, RedeemResult, Store } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import type { Cluster } from 'ioredis';
import { closeRedis, connectRedis } from '../../src/shared-state/redis';
import { redisClusterProblem, startOwnCluster } from '../helpers/redis-cluster';
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from '../helpers/services';
import type { UpstreamSums } from './model';
import type { Abilities, Op } from './ops';
import { CONFIG, MODEL, orderCredit, STRIPE_CONFIG, webhook, type Priced } from './world';
import { keyMember, makeOrganisation, memberBudgetOf, type MadeOrg, type OrgSpec } from './orgs';

export const STORES = ['local', 'sqlite', 'pg', 'redis', 'redis-cluster'] as const;
export type StoreName = (typeof STORES)[number];

export const DESCRIPTIONS: Record<StoreName, string> = {
  local: 'in-process book over SQLite',
  sqlite: 'SQLite book (holds in rows)',
  pg: 'PostgreSQL book',
  redis: 'PostgreSQL + Redis, two instances',
  'redis-cluster': 'PostgreSQL + Redis Cluster, two instances',
};

const silent = pino({ level: 'silent' });

/** How one seed's accounts, keys and codes are set up. */
export interface Setup {
  readonly accounts: readonly { readonly budget: BudgetSpec | null }[];
  readonly keys: readonly { readonly account: number; readonly spendLimit: bigint | null; readonly budget: BudgetSpec | null }[];
  readonly codes: readonly bigint[];
  /** The seed's organisation (`orgs.ts`), or none. */
  readonly org?: OrgSpec | null;
}

interface BudgetSpec {
  readonly amount: bigint;
  readonly period: 'day' | 'week' | 'month';
  readonly timezone: string;
}

export interface LedgerView {
  readonly credits: bigint;
  readonly charges: bigint;
  readonly debits: bigint;
  readonly balance: bigint;
  readonly held: bigint;
  readonly openHolds: bigint;
  readonly chargeRows: number | null;
}

/** What a store rig opens per seed: a store and a book per instance. */
interface Rig {
  readonly abilities: Abilities;
  /** Whether the store's own `held` counts the open holds (holds are rows). */
  readonly holdsInStore: boolean;
  store(): Promise<Store>;
  book(store: Store): Promise<BalanceBook>;
  /** Deletes every Redis key of this rig: Redis restarted empty. */
  flushRedis?(): Promise<void>;
  /** Closes what the rig opened for one seed (an embedded store). */
  release(store: Store): Promise<void>;
  close(): Promise<void>;
}

function embedded(holdsInStore: boolean): Rig {
  return {
    abilities: { instances: 1, stall: !holdsInStore, flushRedis: false },
    holdsInStore,
    // A store per seed: `ledgerTotals` reads every account, and a shared store's would grow with the seeds.
    async store() {
      const store = openStore({ url: 'sqlite::memory:' });
      await store.migrate();
      return store;
    },
    book: async (store) => (holdsInStore ? new StoreBook(store) : new LocalBook(store)),
    release: (store) => store.close(),
    close: async () => undefined,
  };
}

/** The rig of a store, or why it cannot run here. */
export async function openRig(name: StoreName): Promise<Rig | { problem: string }> {
  if (name === 'local') return embedded(false);
  if (name === 'sqlite') return embedded(true);
  const problem = (await postgresProblem()) ?? (name === 'redis' ? await redisProblem() : name === 'redis-cluster' ? redisClusterProblem() : null);
  if (problem !== null) return { problem };
  const database = await createTestDatabase();
  const shared = openStore({ url: database.url });
  await shared.migrate();
  if (name === 'pg') {
    return {
      abilities: { instances: 2, stall: false, flushRedis: false },
      holdsInStore: true,
      store: async () => shared,
      book: async (store) => new StoreBook(store),
      release: async () => undefined,
      close: async () => (await shared.close(), await database.drop()),
    };
  }
  if (name === 'redis-cluster') return clusterRig(shared, database);
  const prefix = redisTestPrefix('sim');
  return {
    abilities: { instances: 2, stall: true, flushRedis: true },
    holdsInStore: false,
    store: async () => shared,
    book: (store) => openRedisBook({ ...CONFIG.redis, url: REDIS_URL, key_prefix: prefix.prefix, command_timeout_ms: 5000 }, store),
    flushRedis: () => prefix.clear(),
    release: async () => undefined,
    close: async () => (await prefix.clear(), await shared.close(), await database.drop()),
  };
}

/**
 * Two Redis books on a Redis Cluster of the rig's own; Redis lost is every primary flushed, each in one
 * step, as a primary restarted empty loses its slots (the book's groups are one slot each, so each
 * loses all its keys at once, never an instance's figures while its epoch stays).
 */
async function clusterRig(shared: Store, database: TestDatabase): Promise<Rig> {
  const cluster = await startOwnCluster();
  const config = { ...CONFIG.redis, url: '', cluster: cluster.seeds, key_prefix: 'sim:', command_timeout_ms: 5000 };
  const admin = await connectRedis(config);
  const flush = async (): Promise<void> => {
    for (const primary of (admin as Cluster).nodes('master')) await primary.flushall();
  };
  return {
    abilities: { instances: 2, stall: true, flushRedis: true },
    holdsInStore: false,
    store: async () => shared,
    book: (store) => openRedisBook(config, store),
    flushRedis: flush,
    release: async () => undefined,
    close: async () => (await closeRedis(admin), await cluster.close(), await shared.close(), await database.drop()),
  };
}

/** A store whose writes for one instance's ledger writer fail on demand: once, or while stalled. */
class WriterGate {
  failNext = false;
  stalled = false;

  store(store: Store): Store {
    return new Proxy(store, {
      get: (target, name, receiver) => {
        if (name !== 'recordCharges') return Reflect.get(target, name, receiver);
        return (charges: readonly ChargeRecord[]) => {
          if (this.stalled || this.failNext) {
            this.failNext = false;
            return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
          }
          return target.recordCharges(charges);
        };
      },
    });
  }
}

interface Instance {
  readonly book: BalanceBook;
  readonly writer: LedgerWriter;
  readonly payments: Payments;
  readonly gate: WriterGate;
}

interface OpenRequest {
  readonly instance: number;
  readonly accountId: string;
  readonly keyId: string;
  readonly memberAccountId: string | null;
  readonly amount: bigint;
  readonly budgets: readonly BudgetCheck[];
}

/** One seed's run on one rig: its accounts, keys, codes, orders and instances. */
export class BookSession {
  readonly accounts: Account[] = [];
  readonly keys: ApiKeyRecord[] = [];
  private readonly instances: Instance[] = [];
  private readonly codes: Buffer[] = [];
  private readonly orders: { id: string; minor: number }[] = [];
  private readonly requests = new Map<string, OpenRequest>();
  private readonly periods = new PeriodCache();
  private readonly tag = randomBytes(4).toString('hex');
  private org: { readonly spec: OrgSpec; readonly made: MadeOrg } | null = null;

  private constructor(
    private readonly rig: Rig,
    readonly store: Store,
  ) {}

  static async open(rig: Rig, setup: Setup): Promise<BookSession> {
    const session = new BookSession(rig, await rig.store());
    for (let i = 0; i < rig.abilities.instances; i++) session.instances.push(await session.startInstance());
    await session.setUp(setup);
    return session;
  }

  get abilities(): Abilities {
    return this.rig.abilities;
  }

  get holdsInStore(): boolean {
    return this.rig.holdsInStore;
  }

  private async setUp(setup: Setup): Promise<void> {
    for (const [index, spec] of setup.accounts.entries()) {
      const name = `sim-${this.tag}-${index}`;
      const org = setup.org?.account === index ? { spec: setup.org, made: await makeOrganisation(this.store, name, setup.org) } : null;
      if (org !== null) this.org = org;
      const account = org?.made.account ?? (await this.store.createAccount({ name, role: 'user' }));
      if (spec.budget !== null) await this.store.setAccountBudget(account.id, spec.budget);
      this.accounts.push((await this.store.findAccountById(account.id))!);
    }
    for (const [index, spec] of setup.keys.entries()) {
      const memberAccountId = keyMember(this.org?.spec ?? null, this.org?.made ?? null, spec.account, index - spec.account * (setup.keys.length / setup.accounts.length));
      this.keys.push(
        await this.store.createKey({
          accountId: this.accounts[spec.account].id,
          name: null,
          hash: randomBytes(32),
          prefix: 'sk-sim',
          last4: 'abcd',
          spendLimit: spec.spendLimit,
          budget: spec.budget,
          ...(memberAccountId === undefined ? {} : { memberAccountId }),
        }),
      );
    }
    for (const amount of setup.codes) {
      const hash = randomBytes(32);
      await this.store.createRedemptionCodes({ hashes: [hash], amount, createdBy: 'sim', expiresAt: null });
      this.codes.push(hash);
    }
  }

  /** The budgets a request by `key` is checked against at `at`, as the billing plugin lists them. */
  budgets(key: number, at: number): BudgetCheck[] {
    const record = this.keys[key];
    const account = this.accounts.find((candidate) => candidate.id === record.accountId)!;
    return budgetChecks(CONFIG, account, record, memberBudgetOf(this.org?.spec ?? null, this.org?.made ?? null, record), new Date(at), this.periods);
  }

  async hold(op: Extract<Op, { kind: 'request' }>, key: number, amount: bigint, at: number): Promise<HoldResult> {
    const record = this.keys[key];
    const budgets = this.budgets(key, at);
    const result = await this.instances[op.instance].book.hold({
      requestId: this.requestId(op.id),
      accountId: record.accountId,
      keyId: record.id,
      ...(record.memberAccountId != null && { memberAccountId: record.memberAccountId }),
      amount,
      expiresAt: new Date(Date.now() + 3_600_000),
      keyLimited: record.spendLimit !== null,
      budgets,
    });
    if (result.ok) this.requests.set(op.id, { instance: op.instance, accountId: record.accountId, keyId: record.id, memberAccountId: record.memberAccountId ?? null, amount, budgets });
    return result;
  }

  /** What billing does when a request ends: the live balances first, then the ledger writer's queue. */
  async settle(request: string, { cost, provider, upstreamCost }: Pick<Priced, 'cost' | 'provider' | 'upstreamCost'>, at: number): Promise<void> {
    const open = this.requests.get(request)!;
    this.requests.delete(request);
    const charge: ChargeRecord = {
      ...PLAIN_CHARGE,
      requestId: this.requestId(request),
      accountId: open.accountId,
      keyId: open.keyId,
      ...(open.memberAccountId !== null && { memberAccountId: open.memberAccountId }),
      model: MODEL,
      provider,
      endpoint: 'chat',
      inputTokens: 0,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 0,
      imageInputTokens: 0,
      imageOutputTokens: 0,
      cost,
      held: open.amount,
      overage: cost > open.amount ? cost - open.amount : 0n,
      upstreamCost,
      usageSource: cost === 0n ? 'none' : 'upstream',
      status: cost === 0n ? 502 : 200,
      outcome: cost === 0n ? 'failed' : 'delivered',
      latencyMs: 1,
      createdAt: new Date(at),
    };
    const instance = this.instances[open.instance];
    await instance.book.settle(charge, open.budgets);
    instance.writer.enqueue(charge);
    // Holds in rows go with the ledger write, which a gateway makes milliseconds later: made at once here.
    if (this.rig.holdsInStore) await this.drain();
  }

  credit(account: number, amount: bigint): Promise<unknown> {
    return this.instances[0].book.credit({ accountId: this.accounts[account].id, amount, kind: 'admin', actor: 'sim', note: null });
  }

  transfer(from: number, to: number, amount: bigint): Promise<TransferResult> {
    return this.instances[0].book.transfer({ fromAccountId: this.accounts[from].id, toAccountId: this.accounts[to].id, amount, actor: 'sim', note: null });
  }

  redeem(account: number, code: number): Promise<RedeemResult> {
    return this.instances[0].book.redeem(this.codes[code], this.accounts[account].id, 'sim');
  }

  async order(op: Extract<Op, { kind: 'order' }>): Promise<void> {
    const order = await this.store.payments.createOrder({ accountId: this.accounts[op.account].id, kind: 'checkout', currency: 'usd', amountMinor: op.minor, creditAmount: orderCredit(op.minor) });
    this.orders[op.order] = { id: order.id, minor: op.minor };
  }

  async stripe(op: Extract<Op, { kind: 'stripe' }>): Promise<void> {
    const order = this.orders[op.order];
    const { raw, signature } = webhook({ ...op, eventId: `${op.eventId}_${this.tag}` }, order.id, order.minor);
    await this.instances[op.instance].payments.webhook(raw, signature);
  }

  /** Every writer writes what it has; a write that fails is tried again, a stalled writer keeps its queue. */
  async drain(): Promise<void> {
    for (const { writer, gate } of this.instances) {
      for (let attempt = 0; attempt < 3 && writer.pending > 0 && !gate.stalled; attempt++) await writer.flush();
      if (writer.pending > 0 && !gate.stalled) throw new Error('a ledger writer could not write its queue');
    }
  }

  /** Whether every charge settled so far is in the ledger. */
  written(): boolean {
    return this.instances.every(({ writer }) => writer.pending === 0);
  }

  writeFails(instance: number): void {
    this.instances[instance].gate.failNext = true;
  }

  stall(instance: number, on: boolean): void {
    this.instances[instance].gate.stalled = on;
  }

  async flushRedis(drainFirst: boolean): Promise<void> {
    if (drainFirst) await this.drain();
    await this.rig.flushRedis!();
  }

  /** SIGTERM: the instance finishes (its writer writes everything), stops, and a new one starts. */
  async restart(instance: number): Promise<void> {
    const stopping = this.instances[instance];
    await stopping.writer.close();
    await stopping.book.close();
    this.instances[instance] = await this.startInstance();
  }

  live(account: number, instance = 0): Promise<{ balance: bigint; held: bigint }> {
    return this.instances[instance].book.balance(this.accounts[account].id);
  }

  budgetSpent(check: BudgetCheck, instance = 0): Promise<bigint> {
    return this.instances[instance].book.budgetSpent(check);
  }

  /** Each account's ledger sums; with `rows`, its charge rows counted too (a slower read: at a seed's end). */
  async ledger(rows: boolean): Promise<Map<string, LedgerView>> {
    const totals = await this.store.ledgerTotals();
    const views = new Map<string, LedgerView>();
    for (const account of this.accounts) {
      const total = totals.find((candidate) => candidate.accountId === account.id)!;
      const chargeRows = rows ? (await this.store.listCharges({ accountId: account.id, limit: 100_000 })).length : null;
      views.set(account.id, { ...total, chargeRows });
    }
    return views;
  }

  /**
   * An account's charges as the operator's usage summary reads them from the ledger: what they cost
   * upstream, the margin (by the gateway's own rule), and how many had no known cost.
   */
  async upstream(account: number): Promise<UpstreamSums> {
    const accountId = this.accounts[account].id;
    const rows = await this.store.usageSummary({ accountId, groupBy: 'account', upstreamCost: true, since: new Date(0), until: new Date(Date.UTC(9999, 0)), limit: 10, offset: 0 });
    const sums = rows[0]?.upstream ?? { cost: 0n, costedCharged: 0n, uncosted: 0 };
    return { cost: sums.cost, margin: marginOf(sums.costedCharged, sums.cost), uncosted: sums.uncosted };
  }

  /** What the book's own drift checks find (a book with a copy of its own: Redis). */
  async drift(): Promise<string[]> {
    const book = this.instances[0].book;
    const totals = (await this.store.ledgerTotals()).filter((total) => this.accounts.some((account) => account.id === total.accountId));
    const found: string[] = [];
    for (const drift of (await book.liveCopy?.drift(totals)) ?? []) found.push(`account ${drift.accountName}: live ${drift.live}, ledger ${drift.ledger}`);
    const members = this.org === null ? [] : this.org.made.memberIds.map((member) => memberBudgetId(this.org!.made.account.id, member));
    const ours = new Set([...this.accounts.map((account) => account.id), ...this.keys.map((key) => key.id), ...members]);
    for (const drift of (await book.liveCopy?.budgetDrift()) ?? []) if (ours.has(drift.id)) found.push(`${drift.scope} budget ${drift.id}: live ${drift.live}, ledger ${drift.ledger}`);
    return found;
  }

  async close(): Promise<void> {
    for (const instance of this.instances) instance.gate.stalled = false;
    for (const { writer, book } of this.instances) {
      await writer.close();
      await book.close();
    }
    await this.rig.release(this.store);
  }

  private requestId(request: string): string {
    return `req_sim_${this.tag}_${request}`;
  }

  private async startInstance(): Promise<Instance> {
    const book = await this.rig.book(this.store);
    const gate = new WriterGate();
    // The gateway's own wiring of book and writer, so the simulator runs what production runs.
    const writer = openBookWriter(gate.store(this.store), book, { intervalMs: 3_600_000, maxRecords: 100_000 }, silent);
    const payments = new Payments({
      store: this.store,
      funds: { applyStored: (accountId, write, moved) => book.applyStored(accountId, write, moved) },
      logger: silent,
      metrics: new PaymentMetrics(new Registry()),
      config: () => STRIPE_CONFIG,
    });
    return { book, writer, payments, gate };
  }
}
