/**
 * The balance book in Redis, shared by every gateway instance: live balances, key spend and holds sit
 * in Redis hashes and change only inside the Lua scripts of `redis-scripts.ts`, each one atomic, so N
 * instances hold against one truth. The ledger stays in the store: a missing hash (new account, Redis
 * restarted empty) is seeded from it, and credits are written to it before they reach Redis.
 *
 * Fail closed: when Redis is unreachable or slow, every method rejects with `BookUnavailableError`
 * within the configured command timeout (billing answers 503) instead of waiting for reconnects.
 *
 * A missing account hash is seeded from the ledger less what every live instance settled that the
 * ledger does not hold yet (`undrained:<instance>`, kept by the settle script and each ledger write;
 * see `seedAccount` for how a seed racing a ledger write counts it once). A missing key or budget
 * hash is seeded from the store's spend plus every live instance's undrained field of it (`seedSpend`).
 *
 * Redis may lose everything (a restart without persistence, a flush, a failover to an empty
 * replica): each instance keeps its undrained figures in memory as well and puts them back before any
 * seed runs in the new state (`redis-epoch.ts`), so a seed never counts an undrained charge as unspent.
 *
 * On a Redis Cluster the keys are cut into groups by account (`book-layout.ts`), one slot each, so
 * the book spreads over the primaries: a request's scripts touch its account's group only, and each
 * group has its own epoch, instance list, undrained hashes and hold expiries. A primary lost loses its
 * groups' state only, and only their epochs move; the sweep, the epoch looks, the drift checks and a
 * stopped instance's outbox go over every group. A single server is one group under the old names.
 *
 * Known gaps, all bounded and all repaired by rebuilding a hash from the ledger:
 * - An instance whose heartbeat lapsed (Redis away from it for 15 s) and that registered no outbox is
 *   taken for dead: a seed meanwhile leaves its undrained charges out. So is a charge whose settle
 *   failed in Redis (it was never taken from a live balance).
 * - A key's limit is read from the store at seeding only; `setKeyLimit` updates a live one.
 * - A hash reseeded while holds were open starts with held = 0 (Redis must not evict these keys:
 *   run it with `maxmemory-policy noeviction`).
 */
import { randomUUID } from 'node:crypto';
import type { RedisConfig } from '../config/types';
import { closeRedis, connectRedis, scanEveryPrimary, type RedisClient } from '../shared-state/redis';
import type { AccountBalance, BudgetCheck, BudgetScope, ChargeRecord, CreditRecord, Hold, HoldResult, LedgerTotals, NewCredit, RedeemResult, SessionBudgetCheck, Store } from '../store/store';
import { BUDGET_SCOPES, budgetOwnerOf, countsIn, memberOfBudget } from '../store/budget-owner';
import { UnknownTransferAccountError, type NewTransfer, type TransferResult } from '../store/transfers';
import { BookUnavailableError, type AdoptedCharge, type BalanceBook } from './book';
import type { AccountDrift, BudgetDrift, LiveCopy, StoppedOutbox } from './live-copy';
import { PeriodCache } from './budget-period';
import { bookLayout, type BookGroup, type BookLayout } from './book-layout';
import { defineBookScripts, type BookScript, type RunScript } from './redis-scripts';
import { EPOCH_CHECK_MS, EPOCH_MOVED, InstanceFigures, RedisEpoch } from './redis-epoch';

/** Redis integers are signed 64-bit; `HINCRBY` refuses anything beyond, halfway through a script. */
const MAX_BOOK_AMOUNT = 2n ** 63n - 1n;

/** How long a settled request id is remembered, so a repeated settlement changes nothing. */
const SETTLED_TTL_S = 24 * 60 * 60;
/** Expired holds released per sweep; the next sweep takes the rest. */
const SWEEP_BATCH = 500;
/** How long a credit's fence outlives an instance that died while writing it. */
const CREDIT_FENCE_TTL_S = 30;
/** How long a credit's Redis step is remembered, so retrying it cannot apply it twice. */
const CREDIT_DONE_TTL_S = 10 * 60;
const CREDIT_END_ATTEMPTS = 3;
/** A seed waits this long between looks, for at most SEED_WAIT_MS, for credits being written to finish. */
const SEED_RETRY_MS = 25;
const SEED_WAIT_MS = 1000;
/**
 * And it has at least this many tries, however long they take: what a try waits for is a gap between
 * the writes it races, and on a loaded machine each try (a probe, three store reads, the seed script)
 * takes longer, so a bound in time alone gave it a handful of chances where a quiet one gets hundreds.
 */
const SEED_MIN_TRIES = 50;
/** A seed that raced a ledger write tries again this much sooner: writes are short and frequent. */
const SEED_RACE_RETRY_MS = 2;
/** An instance that has not said it is alive for this long is dead: its unwritten charges are lost. */
const INSTANCE_TTL_MS = 15_000;
const INSTANCE_HEARTBEAT_MS = 5_000;
/** A stopped instance's undrained figures are kept this long for its outbox to be replayed. */
const UNDRAINED_TTL_MS = 24 * 60 * 60 * 1000;
/** A budget's hash outlives its period by this much, for the drift check and late settlements. */
const BUDGET_KEPT_AFTER_MS = 2 * 24 * 60 * 60 * 1000;
/** A session's hash is kept this long after its last hold; a session idle longer is seeded again from the ledger. */
const SESSION_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** A hold that found the state copied (a Cluster's promoted replica) looks at the epoch and tries again this often at most. */
const HOLD_EPOCH_ATTEMPTS = 3;
/** Replayed charges moved per script: a long outbox is not one long blocking step. */
const ADOPT_BATCH = 200;

/** Reply errors that mean "not now" rather than "this script is wrong". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|OOM|NOREPLICAS)\b/;

export interface RedisBookOptions {
  /** Connection errors and credits that reached the ledger but not Redis; nothing here is thrown. */
  readonly onError?: (error: Error) => void;
}

export async function openRedisBook(config: RedisConfig, store: Store, options: RedisBookOptions = {}): Promise<RedisBook> {
  const redis = await connectRedis(config, { connectionName: 'tollgate-book', onError: options.onError });
  const book = new RedisBook(redis, store, config.key_prefix, options);
  await book.start();
  return book;
}

export class RedisBook implements BalanceBook, LiveCopy {
  /** This book is its own live copy: the drift checks, heal and outbox bookkeeping are on Redis's figures. */
  readonly liveCopy: LiveCopy = this;
  private readonly run: RunScript;
  private unwritten: (counts: (charge: ChargeRecord) => boolean) => bigint;
  /** This book's instance, which the `unwritten:<instance>` figures in account hashes belong to. */
  readonly instance: string;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly periods = new PeriodCache();
  /** The budget hashes each settled charge moved (all in its account's group), until the ledger has it (their `unwritten` figures). */
  private readonly budgetsUnwritten = new Map<string, { readonly group: BookGroup; readonly keys: readonly string[] }>();
  /** Where the keys go: one group on a single server, one per hash tag on a Cluster (`book-layout.ts`). */
  private readonly layout: BookLayout;
  /** Per group: this instance's undrained figures there (the truth Redis's copy is put back from after a loss) and its epoch. */
  private readonly states: readonly { readonly figures: InstanceFigures; readonly epoch: RedisEpoch }[];
  private readonly epochCheck: NodeJS.Timeout;
  /** Counts the client's connections; the first one was made before this book. */
  private connection = 0;
  /** The connection whose server the epoch was last looked at on: only there may scripts run unchecked. */
  private checkedConnection = -1;
  /** The account of each key this book has met, for the work that names a key only (its group is its account's). */
  private readonly keyAccounts = new Map<string, string>();
  /** The key name of each budget drift found, so a rebuild drops the hash the check read. */
  private readonly driftKeys = new WeakMap<BudgetDrift, string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly store: Store,
    keyPrefix: string,
    private readonly options: RedisBookOptions = {},
  ) {
    this.layout = bookLayout(keyPrefix, redis.isCluster);
    this.run = defineBookScripts(redis);
    this.unwritten = () => 0n;
    this.instance = randomUUID();
    // Tells the drift check and seeds that this instance is alive, so its unwritten charges are on their
    // way; in every group, since each group's scripts look for it in their own slot.
    const beat = (): void => {
      for (const group of this.layout.groups) {
        void this.redis
          .multi()
          .set(group.heartbeat(this.instance), '1', 'PX', INSTANCE_TTL_MS)
          .sadd(group.instances(), this.instance)
          .pexpire(group.undrained(this.instance), UNDRAINED_TTL_MS)
          .exec()
          .catch(() => undefined);
      }
    };
    beat();
    this.heartbeat = setInterval(beat, INSTANCE_HEARTBEAT_MS);
    this.heartbeat.unref();
    const copied = (dropped: number): void =>
      this.options.onError?.(
        new Error(`Redis's state was copied from another server (a promoted replica, or a restart from a snapshot): dropped ${dropped} live balance, spend and hold keys, reseeding them from the ledger`),
      );
    const run: RunScript = (name, scriptKeys, args) => this.run(name, scriptKeys, args).catch((error: unknown) => this.unavailable(error));
    this.states = this.layout.groups.map((group) => {
      const figures = new InstanceFigures();
      const keys = {
        epoch: group.epoch(),
        holdExpiries: group.holdExpiries(),
        prefix: group.prefix,
        undrained: group.undrained(this.instance),
        instances: group.instances(),
        heartbeat: group.heartbeat(this.instance),
      };
      return { figures, epoch: new RedisEpoch(run, keys, this.instance, INSTANCE_TTL_MS, figures, copied) };
    });
    // A restart or a failover shows as a new connection; a flush leaves the connection up, so it is
    // looked for too. Each group's epoch is looked at: on a Cluster, a primary lost takes its groups only.
    const look = (): void => void this.lookEverywhere().catch(() => undefined);
    this.epochCheck = setInterval(look, EPOCH_CHECK_MS);
    this.epochCheck.unref();
    this.redis.on('ready', () => {
      this.connection += 1;
      look();
    });
  }

  /** Finds (or makes) Redis's epoch, so this instance's figures stand in it from the start. */
  async start(): Promise<void> {
    await this.checkServer().catch(() => undefined);
  }

  private async lookEverywhere(): Promise<void> {
    await Promise.all(this.states.map((state) => state.epoch.look()));
  }

  /**
   * Looks at the epoch on the current connection's server, so a copied state is found and dropped
   * before any script reads a balance there. Done again when the connection changed during the look:
   * its answer may have come from the server before.
   */
  private async checkServer(): Promise<void> {
    while (this.checkedConnection !== this.connection) {
      const at = this.connection;
      await this.lookEverywhere();
      if (this.connection === at) this.checkedConnection = at;
    }
  }

  private state(group: BookGroup): { readonly figures: InstanceFigures; readonly epoch: RedisEpoch } {
    return this.states[group.index];
  }

  /** The group of the account whose key this is: learnt from holds and settlements, else from the store. */
  private async groupOfKey(keyId: string): Promise<BookGroup> {
    if (this.layout.groups.length === 1) return this.layout.groups[0];
    let accountId = this.keyAccounts.get(keyId);
    if (accountId === undefined) {
      accountId = (await this.store.listKeys()).find((key) => key.id === keyId)?.accountId;
      if (accountId === undefined) throw new Error(`no key with id "${keyId}"`);
      this.keyAccounts.set(keyId, accountId);
    }
    return this.layout.groupOf(accountId);
  }

  /** A budget's hash is in its account's group: the account's own, the key's account's, the member's organisation's. */
  private async groupOfBudget(scope: BudgetScope, id: string): Promise<BookGroup> {
    switch (scope) {
      case 'account':
        return this.layout.groupOf(id);
      case 'member':
        return this.layout.groupOf(memberOfBudget(id).organisationId);
      case 'key':
        return this.groupOfKey(id);
    }
  }

  private knowKey(keyId: string, accountId: string): void {
    if (this.layout.groups.length > 1 && !this.keyAccounts.has(keyId)) this.keyAccounts.set(keyId, accountId);
  }

  async hold(hold: Hold): Promise<HoldResult> {
    checkAmount('a hold', hold.amount, 1n);
    const group = this.layout.groupOf(hold.accountId);
    this.knowKey(hold.keyId, hold.accountId);
    const budgets = hold.budgets ?? [];
    const sessionBudgets = hold.sessionBudgets ?? [];
    const keys = [group.account(hold.accountId), group.key(hold.keyId), group.hold(hold.requestId), group.holdExpiries()];
    const args = [String(hold.amount), hold.accountId, hold.keyId, String(hold.expiresAt.getTime()), hold.requestId, String(budgets.length)];
    for (const budget of budgets) {
      checkAmount('a budget', budget.amount, 1n);
      keys.push(group.budget(budget.scope, budget.id, budget.start, budget.end));
      args.push(heldHash(group, budget, keys[0], keys[1]), String(budget.amount));
    }
    for (const budget of sessionBudgets) {
      checkAmount('a session budget', budget.amount, 1n);
      keys.push(group.session(budget.scope, budget.id, budget.sessionId));
      args.push(String(budget.amount));
    }
    // On a Cluster the hold itself asks whether the epoch stands on the server it runs on: a replica
    // promoted there is reached through a redirection, with no new connection to look at first.
    args.push(String(SESSION_KEPT_MS), this.redis.isCluster ? group.epoch() : '');
    for (let attempt = 1, epochLooks = 0; ; attempt++) {
      const reply = replyList(await this.script('hold', keys, args));
      switch (reply[0]) {
        case 'ok':
          return { ok: true };
        case 'epoch':
          if (++epochLooks > HOLD_EPOCH_ATTEMPTS) throw new BookUnavailableError('the Redis epoch kept moving under a hold');
          await this.guard(() => this.state(group).epoch.look());
          attempt -= 1;
          break;
        case 'balance':
          return { ok: false, reason: 'balance', available: atLeastZero(big(reply[1]) - big(reply[2])) };
        case 'key_spend_limit':
          return { ok: false, reason: 'key_spend_limit', available: atLeastZero(big(reply[1]) - big(reply[2]) - big(reply[3])) };
        case 'budget': {
          const budget = budgets[Number(reply[1]) - 1];
          return { ok: false, reason: 'budget', budget, available: atLeastZero(budget.amount - big(reply[2]) - big(reply[3])) };
        }
        case 'session_budget': {
          const budget = sessionBudgets[Number(reply[1]) - 1];
          const spent = big(reply[2]);
          return { ok: false, reason: 'session_budget', budget, spent, available: atLeastZero(budget.amount - spent - big(reply[3])) };
        }
        case 'conflict':
          throw new Error(`request ${hold.requestId} already holds funds for another account, key or amount`);
        case 'seed':
          // Seeded once and gone again means something evicts or flushes these keys: not safe to go on.
          if (attempt > 1) throw new BookUnavailableError(`the Redis balance of account ${hold.accountId} vanished right after seeding`);
          if (reply[1] === 1 && !(await this.seedAccount(hold.accountId))) return { ok: false, reason: 'balance', available: 0n };
          if (reply[2] === 1 && !(await this.seedKey(hold.accountId, hold.keyId))) return { ok: false, reason: 'key_spend_limit', available: 0n };
          for (const [index, missing] of [...(typeof reply[3] === 'string' ? reply[3] : '')].entries()) {
            if (missing !== '1') continue;
            if (index < budgets.length) await this.seedBudget(group, budgets[index]);
            else await this.seedSession(group, sessionBudgets[index - budgets.length]);
          }
          break;
        default:
          throw new Error(`unexpected reply from the hold script: ${JSON.stringify(reply)}`);
      }
    }
  }

  async settle(charge: ChargeRecord, budgets: readonly BudgetCheck[] = []): Promise<void> {
    checkAmount('a charge', charge.cost, 0n);
    const group = this.layout.groupOf(charge.accountId);
    const { figures } = this.state(group);
    this.knowKey(charge.keyId, charge.accountId);
    // Counted in the budgets before the hold is freed: in between, a racing hold sees the charge
    // twice (too careful), never not at all.
    if (budgets.length > 0 && charge.cost > 0n) {
      const keys = budgets.map((budget) => {
        const period = this.periods.at(charge.createdAt, budget.period, budget.timezone);
        return group.budget(budget.scope, budget.id, period.start, period.end);
      });
      const fields = keys.map((key) => group.budgetField(key));
      // Counted before the script is sent, as the account's below: the ledger write will lower them.
      for (const field of fields) figures.addUndrained(field, charge.cost);
      this.budgetsUnwritten.set(charge.requestId, { group, keys });
      await this.script('chargeBudgets', [group.undrained(this.instance), ...keys], [String(charge.cost), this.instance, ...fields]);
    }
    const keys = [
      group.hold(charge.requestId),
      group.holdExpiries(),
      group.settled(charge.requestId),
      group.account(charge.accountId),
      group.key(charge.keyId),
      group.undrained(this.instance),
    ];
    // The session's hashes, where they exist, count the charge in the step that frees its hold.
    if (charge.sessionId != null) keys.push(group.session('key', charge.keyId, charge.sessionId), group.session('account', charge.accountId, charge.sessionId));
    // Counted before the script is sent: a failed settle's charge is on its way to the ledger all the same.
    const keyField = spendField(charge.keyId);
    figures.addUndrained(charge.accountId, charge.cost);
    figures.addUndrained(keyField, charge.cost);
    const reply = replyList(await this.script('settle', keys, [String(charge.cost), charge.requestId, String(SETTLED_TTL_S), this.instance, charge.accountId, keyField]));
    if (reply[0] === 'repeat') {
      figures.addUndrained(charge.accountId, -charge.cost);
      figures.addUndrained(keyField, -charge.cost);
    }
  }

  /**
   * The ledger first: it is the truth, and a credit that reached Redis but not the ledger would vanish
   * at the next reseed. A fence around the ledger write keeps a concurrent seed from reading the ledger
   * before the credit and writing after it (credit lost) or reading after it and writing before the
   * credit's Redis step (credit counted twice).
   */
  async credit(input: NewCredit): Promise<CreditRecord> {
    checkAmount('a credit', input.amount, 1n);
    const token = randomUUID();
    // Redis down: refused before the ledger is touched, so retrying cannot credit twice.
    await this.script('creditBegin', [this.layout.groupOf(input.accountId).creditFence(input.accountId)], [String(CREDIT_FENCE_TTL_S)]);
    let record: CreditRecord;
    try {
      record = await this.store.credit(input);
    } catch (error) {
      await this.endCredit(input.accountId, token, 0n).catch(() => undefined);
      throw error;
    }
    try {
      await this.endCredit(input.accountId, token, input.amount);
    } catch (error) {
      const message = `credit ${record.id} is in the ledger but not in the Redis balance of account ${input.accountId}, which stays short by it until rebuilt from the ledger`;
      this.options.onError?.(new Error(message, { cause: error }));
    }
    return record;
  }

  /** A redemption is a credit the store writes itself; the same fence keeps a racing seed from counting it twice. */
  async redeem(codeHash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    const token = randomUUID();
    await this.script('creditBegin', [this.layout.groupOf(accountId).creditFence(accountId)], [String(CREDIT_FENCE_TTL_S)]);
    let result: RedeemResult;
    try {
      result = await this.store.redeemCode(codeHash, accountId, actor);
    } catch (error) {
      await this.endCredit(accountId, token, 0n).catch(() => undefined);
      throw error;
    }
    const amount = result.ok ? result.credit.amount : 0n;
    try {
      await this.endCredit(accountId, token, amount);
    } catch (error) {
      if (result.ok) {
        const message = `credit ${result.credit.id} is in the ledger but not in the Redis balance of account ${accountId}, which stays short by it until rebuilt from the ledger`;
        this.options.onError?.(new Error(message, { cause: error }));
      }
    }
    return result;
  }

  /** A payment's credit or debit, written by the store itself: fenced as a redemption is. */
  async applyStored<T>(accountId: string, write: () => Promise<T>, moved: (result: T) => bigint): Promise<T> {
    const token = randomUUID();
    await this.script('creditBegin', [this.layout.groupOf(accountId).creditFence(accountId)], [String(CREDIT_FENCE_TTL_S)]);
    let result: T;
    try {
      result = await write();
    } catch (error) {
      await this.endCredit(accountId, token, 0n).catch(() => undefined);
      throw error;
    }
    const amount = moved(result);
    try {
      await this.endCredit(accountId, token, amount);
    } catch (error) {
      if (amount !== 0n) {
        const message = `a payment of ${amount} nano-units is in the ledger but not in the Redis balance of account ${accountId}, which is off by it until rebuilt from the ledger`;
        this.options.onError?.(new Error(message, { cause: error }));
      }
    }
    return result;
  }

  /**
   * Takes the amount from the source's live balance first, in one script with the transfer rule's
   * check (so no hold on any instance takes the same funds meanwhile), with both accounts fenced as
   * for a credit; then the ledger; then the destination's live balance gains it. A failed or refused
   * ledger write gives the amount back. An instance dying in between leaves the source short and the
   * destination not yet credited in Redis (drift on the safe side, healed from the ledger). On a
   * Cluster, with the two accounts in different groups (slots), the destination's fence is put up by
   * a script of its own first, and lifted when the take refuses.
   */
  async transfer(input: NewTransfer): Promise<TransferResult> {
    checkAmount('a transfer', input.amount, 1n);
    const from = this.layout.groupOf(input.fromAccountId);
    const to = this.layout.groupOf(input.toAccountId);
    const apart = from !== to;
    const keys = [from.account(input.fromAccountId), from.creditFence(input.fromAccountId), ...(apart ? [] : [to.creditFence(input.toAccountId)])];
    const args = [String(input.amount), String(CREDIT_FENCE_TTL_S), this.redis.isCluster ? from.epoch() : ''];
    if (apart) await this.script('creditBegin', [to.creditFence(input.toAccountId)], [String(CREDIT_FENCE_TTL_S)]);
    const unfence = (): Promise<unknown> => (apart ? this.endCredit(input.toAccountId, randomUUID(), 0n).catch(() => undefined) : Promise.resolve());
    try {
      for (let attempt = 1, epochLooks = 0; ; attempt++) {
        const reply = replyList(await this.script('transferTake', keys, args));
        if (reply[0] === 'ok') break;
        if (reply[0] === 'balance') {
          await unfence();
          return { ok: false, reason: 'balance', available: atLeastZero(big(reply[1]) - big(reply[2])) };
        }
        if (reply[0] === 'epoch') {
          if (++epochLooks > HOLD_EPOCH_ATTEMPTS) throw new BookUnavailableError('the Redis epoch kept moving under a transfer');
          await this.guard(() => this.state(from).epoch.look());
          attempt -= 1;
          continue;
        }
        if (reply[0] !== 'seed') throw new Error(`unexpected reply from the transfer script: ${JSON.stringify(reply)}`);
        if (attempt > 1) throw new BookUnavailableError(`the Redis balance of account ${input.fromAccountId} vanished right after seeding`);
        if (!(await this.seedAccount(input.fromAccountId))) throw new UnknownTransferAccountError('an account of the transfer does not exist');
      }
    } catch (error) {
      await unfence();
      throw error;
    }
    let result: TransferResult;
    try {
      result = await this.store.transfers.transfer(input, 0n);
    } catch (error) {
      await this.endCredit(input.fromAccountId, randomUUID(), input.amount).catch(() => undefined);
      await this.endCredit(input.toAccountId, randomUUID(), 0n).catch(() => undefined);
      throw error;
    }
    const done = result.ok;
    const ends: [string, bigint, string][] = [
      [input.fromAccountId, done ? 0n : input.amount, `the source's Redis balance (account ${input.fromAccountId}) stays short by ${input.amount} nano-units`],
      [input.toAccountId, done ? input.amount : 0n, `the destination's Redis balance (account ${input.toAccountId}) lacks ${input.amount} nano-units`],
    ];
    for (const [accountId, amount, gap] of ends) {
      await this.endCredit(accountId, randomUUID(), amount).catch((error: unknown) => {
        if (amount !== 0n || done) this.options.onError?.(new Error(`a transfer's last Redis step failed: ${gap} until rebuilt from the ledger`, { cause: error }));
      });
    }
    return result;
  }

  /** Where seeding learns what this instance's ledger writer has not written yet, by account. */
  countUnwritten(unwritten: (counts: (charge: ChargeRecord) => boolean) => bigint): void {
    this.unwritten = unwritten;
  }

  /**
   * Charges replayed from the outbox were taken from the live balance by the instance each names:
   * their amounts move from its undrained and `unwritten` figures (account, key, budget periods) to
   * this one's, which the ledger writer will clear. A hash missing meanwhile is seeded later from the
   * ledger plus the undrained figures, which have them.
   */
  async adopt(charges: readonly AdoptedCharge[]): Promise<void> {
    // By the instance that took them and the group they live in: one script moves one group's figures.
    const batches = new Map<string, { from: string; group: BookGroup; charges: ChargeRecord[] }>();
    for (const { charge, instance } of charges) {
      if (instance === null || instance === this.instance || charge.cost === 0n) continue;
      const group = this.layout.groupOf(charge.accountId);
      const name = `${instance} ${group.index}`;
      const batch = batches.get(name) ?? { from: instance, group, charges: [] };
      batch.charges.push(charge);
      batches.set(name, batch);
    }
    for (const { from, group, charges: taken } of batches.values()) {
      const { figures } = this.state(group);
      for (let at = 0; at < taken.length; at += ADOPT_BATCH) {
        const batch = taken.slice(at, at + ADOPT_BATCH);
        for (const charge of batch) {
          figures.addUndrained(charge.accountId, charge.cost);
          figures.addUndrained(spendField(charge.keyId), charge.cost);
        }
        const args = [
          from,
          this.instance,
          group.prefix,
          ...batch.flatMap((charge) => [charge.accountId, charge.keyId, budgetOwnerOf(charge, 'member') ?? '', String(charge.createdAt.getTime()), String(charge.cost)]),
        ];
        const moved = replyList(await this.script('moveUndrained', [group.undrained(from), group.undrained(this.instance)], args)) as string[];
        batch.forEach((charge, index) => {
          const fields = moved[index] === '' ? [] : moved[index].split('\n');
          for (const field of fields) figures.addUndrained(field, charge.cost);
          if (fields.length > 0) this.budgetsUnwritten.set(charge.requestId, { group, keys: fields.map((field) => group.budgetOf(field)) });
        });
      }
    }
    // What is left under those instances was never in an outbox: lost, and drift from now on.
    const adopted = new Set([...batches.values()].map((batch) => batch.from));
    for (const instance of adopted) await this.everyGroup((group) => this.redis.del(group.outbox(instance)));
  }

  /** Kept without expiry: outlives the heartbeat, so a stopped instance's charges read as on their way. In every group, as the heartbeat is. */
  async registerOutbox(where: string | null): Promise<void> {
    if (where === null) await this.everyGroup((group) => this.redis.del(group.outbox(this.instance)));
    else await this.everyGroup((group) => this.redis.set(group.outbox(this.instance), where));
  }

  /** `work` on every group at once; Redis unreachable → `BookUnavailableError`. */
  private everyGroup<T>(work: (group: BookGroup) => Promise<T>): Promise<T[]> {
    return this.guard(() => Promise.all(this.layout.groups.map(work)));
  }

  /** Stopped instances (no heartbeat) whose outbox is registered, with the `unwritten` they left. */
  async stoppedOutboxes(): Promise<StoppedOutbox[]> {
    const found = new Map<string, string>();
    for (const key of await this.scanKeys('outbox:')) {
      const parsed = this.layout.parse(key);
      if (parsed === null) continue;
      const instance = parsed.rest.slice('outbox:'.length);
      const [where, alive] = await this.guard(() => Promise.all([this.redis.get(key), this.redis.exists(parsed.group.heartbeat(instance))]));
      if (where !== null && alive === 0) found.set(instance, where);
    }
    if (found.size === 0) return [];
    const left = new Map<string, { accounts: number; amount: bigint }>();
    for (const account of await this.scanKeys('account:')) {
      const figures = await this.guard(() => this.redis.hmget(account, ...[...found.keys()].map((instance) => `unwritten:${instance}`)));
      [...found.keys()].forEach((instance, index) => {
        const value = figures[index];
        if (value === null || value === '0') return;
        const sum = left.get(instance) ?? { accounts: 0, amount: 0n };
        left.set(instance, { accounts: sum.accounts + 1, amount: sum.amount + BigInt(value) });
      });
    }
    return [...found].flatMap(([instance, where]) => {
      const sum = left.get(instance);
      return sum === undefined ? [] : [{ instance, where, accounts: sum.accounts, amount: sum.amount }];
    });
  }

  /**
   * Runs a ledger write so that a seed racing it neither misses its charges nor counts them twice: the
   * write is marked under way (with one of its request ids per account, which a seed looks up in the
   * ledger) before it starts, and its charges leave the undrained and unwritten figures in the same
   * step as the mark goes. Redis unreachable: the write goes ahead anyway (the ledger comes first);
   * the figures it could not change show as drift until healed. On a Cluster each group's charges are
   * marked and cleared by a script of their own (a seed reads one group's marks only): all marked
   * before the store write, each cleared after it.
   */
  async writeLedger(charges: readonly ChargeRecord[], write: () => Promise<number>): Promise<number> {
    const parts = this.byGroup(charges).map(([group, part]) => {
      const byAccount = this.fieldsOf(part, false);
      const accounts = [...byAccount.keys()];
      const fences = [...accounts.map((id) => group.creditFence(id)), ...this.spendFencesOf(group, part)];
      return { group, accounts, fields: [...byAccount, ...this.fieldsOf(part, true)], fences, began: false };
    });
    await Promise.all(
      parts.map(async (part) => {
        const { figures } = this.state(part.group);
        for (const [field, { probe, amount }] of part.fields) figures.beginWrite(field, `${probe} ${amount}`);
        const args = [String(CREDIT_FENCE_TTL_S), ...part.fields.flatMap(([field, { probe, amount }]) => [field, probe, String(amount)])];
        part.began = await this.script('writeBegin', [part.group.undrained(this.instance), ...part.fences], args).then(
          () => true,
          (error: unknown) => (this.options.onError?.(new Error(`marking a ledger write of ${charges.length} charges in Redis failed; a seed racing it may be off by them`, { cause: error })), false),
        );
      }),
    );
    let recorded: number;
    try {
      recorded = await write();
    } catch (error) {
      await Promise.all(parts.filter((part) => part.began).map((part) => this.endWrite(part, false).catch(() => undefined)));
      throw error;
    }
    await Promise.all(
      parts.map((part) =>
        this.endWrite(part, true).catch((error: unknown) =>
          this.options.onError?.(new Error(`the undrained and unwritten figures of ${part.accounts.length} accounts in Redis missed charges just written (drift until healed)`, { cause: error })),
        ),
      ),
    );
    this.budgetsWritten(charges);
    return recorded;
  }

  private endWrite(part: { readonly group: BookGroup; readonly accounts: readonly string[]; readonly fields: readonly (readonly [string, WriteShare])[]; readonly fences: readonly string[] }, committed: boolean): Promise<unknown> {
    const { group, accounts, fields, fences } = part;
    const { figures } = this.state(group);
    for (const [field, { amount }] of fields) {
      figures.endWrite(field);
      if (committed) figures.addUndrained(field, -amount);
    }
    return this.script(
      'writeEnd',
      [group.undrained(this.instance), ...accounts.map((id) => group.account(id)), ...fences],
      [String(CREDIT_FENCE_TTL_S), this.instance, committed ? '1' : '0', String(accounts.length), ...fields.flatMap(([field, { amount }]) => [field, String(amount)])],
    );
  }

  /** The charges by the group of their account, in the order the groups are first met. */
  private byGroup(charges: readonly ChargeRecord[]): [BookGroup, ChargeRecord[]][] {
    const parts = new Map<BookGroup, ChargeRecord[]>();
    for (const charge of charges) {
      const group = this.layout.groupOf(charge.accountId);
      const part = parts.get(group);
      if (part === undefined) parts.set(group, [charge]);
      else part.push(charge);
    }
    return [...parts];
  }

  /**
   * What the charges lower, by undrained field, with one of their request ids: the accounts' fields,
   * or (`spend`) the keys' and budget periods' ones.
   */
  private fieldsOf(charges: readonly ChargeRecord[], spend: boolean): Map<string, WriteShare> {
    const shares = new Map<string, WriteShare>();
    const count = (field: string, charge: ChargeRecord): void => {
      const share = shares.get(field);
      if (share === undefined) shares.set(field, { probe: charge.requestId, amount: charge.cost });
      else share.amount += charge.cost;
    };
    for (const charge of charges) {
      if (!spend) {
        count(charge.accountId, charge);
        continue;
      }
      if (charge.cost === 0n) continue;
      count(spendField(charge.keyId), charge);
      const budgets = this.budgetsUnwritten.get(charge.requestId);
      for (const key of budgets?.keys ?? []) count(budgets!.group.budgetField(key), charge);
    }
    return shares;
  }

  /** The spend fences a write of these charges (all of `group`) moves: each key's, member's and account's. */
  private spendFencesOf(group: BookGroup, charges: readonly ChargeRecord[]): string[] {
    const fences = new Set<string>();
    for (const charge of charges) {
      for (const scope of BUDGET_SCOPES) {
        const id = budgetOwnerOf(charge, scope);
        if (id !== null) fences.add(group.spendFence(scope, id));
      }
    }
    return [...fences];
  }

  /**
   * The charges left the ledger queue without `writeLedger` (set aside, or a writer that does not go
   * through it): they leave the accounts' undrained and unwritten figures and the budgets' unwritten.
   */
  written(charges: readonly ChargeRecord[]): void {
    const byAccount = new Map<string, bigint>();
    for (const charge of charges) byAccount.set(charge.accountId, (byAccount.get(charge.accountId) ?? 0n) + charge.cost);
    for (const [accountId, amount] of byAccount) {
      if (amount === 0n) continue;
      const group = this.layout.groupOf(accountId);
      const { figures } = this.state(group);
      const spends = [...this.fieldsOf(charges.filter((charge) => charge.accountId === accountId), true)];
      figures.addUndrained(accountId, -amount);
      for (const [field, share] of spends) figures.addUndrained(field, -share.amount);
      const args = [String(amount), this.instance, accountId, ...spends.flatMap(([field, share]) => [field, String(share.amount)])];
      this.script('written', [group.account(accountId), group.undrained(this.instance)], args).catch((error: unknown) =>
        this.options.onError?.(new Error(`account ${accountId}'s unwritten figure in Redis missed ${amount} nano-units just written (drift until healed)`, { cause: error })),
      );
    }
    this.budgetsWritten(charges);
  }

  private budgetsWritten(charges: readonly ChargeRecord[]): void {
    const byGroup = new Map<BookGroup, Map<string, bigint>>();
    for (const charge of charges) {
      const budgets = this.budgetsUnwritten.get(charge.requestId);
      if (budgets === undefined) continue;
      this.budgetsUnwritten.delete(charge.requestId);
      const byBudget = byGroup.get(budgets.group) ?? new Map<string, bigint>();
      byGroup.set(budgets.group, byBudget);
      for (const key of budgets.keys) byBudget.set(key, (byBudget.get(key) ?? 0n) + charge.cost);
    }
    for (const byBudget of byGroup.values()) {
      this.script('budgetsWritten', [...byBudget.keys()], [...[...byBudget.values()].map(String), this.instance]).catch((error: unknown) =>
        this.options.onError?.(new Error(`the unwritten figures of ${byBudget.size} budgets in Redis missed charges just written (drift until healed)`, { cause: error })),
      );
    }
  }

  async balance(accountId: string): Promise<AccountBalance> {
    const group = this.layout.groupOf(accountId);
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [balance, held] = await this.guard(() => this.redis.hmget(group.account(accountId), 'balance', 'held'));
      if (balance != null && held != null) return { balance: BigInt(balance), held: BigInt(held) };
      if (!(await this.seedAccount(accountId))) throw new Error(`no account with id "${accountId}"`);
    }
    throw new BookUnavailableError(`the Redis balance of account ${accountId} vanished right after seeding`);
  }

  /**
   * Accounts whose live balance is not the ledger's: Redis's balance plus what it took that live
   * instances have not written yet (`unwritten:<instance>`, counted while the instance's heartbeat
   * key exists) must equal the ledger's balance. A dead instance's figure is what its crash lost, so
   * it shows as drift. Accounts without a live hash are left out (seeded from the ledger when next used).
   * Read group by group: on a Cluster each group is one slot, one pipeline.
   */
  async drift(totals: readonly LedgerTotals[]): Promise<AccountDrift[]> {
    const byGroup = new Map<BookGroup, LedgerTotals[]>();
    for (const account of totals) {
      const group = this.layout.groupOf(account.accountId);
      byGroup.set(group, [...(byGroup.get(group) ?? []), account]);
    }
    const drifts = await Promise.all([...byGroup].map(([group, accounts]) => this.groupDrift(group, accounts)));
    return drifts.flat();
  }

  private async groupDrift(group: BookGroup, totals: readonly LedgerTotals[]): Promise<AccountDrift[]> {
    const hashes = await this.guard(async () => {
      const pipeline = this.redis.pipeline();
      for (const account of totals) pipeline.hgetall(group.account(account.accountId));
      return (await pipeline.exec()) ?? [];
    });
    const fields = hashes.map(([error, value], index) => {
      if (error !== null) throw new BookUnavailableError(`reading account ${totals[index].accountId}'s live balance failed: ${error.message}`);
      return value as Record<string, string>;
    });
    const instances = [...new Set(fields.flatMap((hash) => Object.keys(hash).filter((name) => name.startsWith('unwritten:')).map((name) => name.slice(10))))];
    const alive = new Set<string>();
    if (instances.length > 0) {
      const exists = await this.guard(() => this.redis.mget(...instances.map((instance) => group.heartbeat(instance))));
      // A stopped instance with a registered outbox keeps its charges there: on their way, not lost.
      const outboxes = await this.guard(() => this.redis.mget(...instances.map((instance) => group.outbox(instance))));
      instances.forEach((instance, index) => (exists[index] !== null || outboxes[index] !== null) && alive.add(instance));
    }
    const drifts: AccountDrift[] = [];
    totals.forEach((account, index) => {
      const hash = fields[index];
      if (hash.balance === undefined) return;
      let live = BigInt(hash.balance);
      for (const [name, value] of Object.entries(hash)) {
        if (name.startsWith('unwritten:') && alive.has(name.slice(10))) live += BigInt(value);
      }
      if (live !== account.balance) drifts.push({ accountId: account.accountId, accountName: account.accountName, live, ledger: account.balance });
    });
    return drifts;
  }

  /** Drops these accounts' live balances and budget spends (theirs and their keys'); each is seeded again from the ledger when next used. */
  async rebuild(accountIds: readonly string[]): Promise<void> {
    if (accountIds.length === 0) return;
    const dropped: string[] = accountIds.map((id) => this.layout.groupOf(id).account(id));
    // A member budget's id starts with its organisation's: '<org id>/<member id>'.
    const owners = [...accountIds.flatMap((id) => [`account:${id}:`, `member:${id}/`])];
    for (const accountId of accountIds) owners.push(...(await this.store.listKeys({ accountId })).map((key) => `key:${key.id}:`));
    for (const name of [...(await this.scanKeys('budget:')), ...(await this.scanKeys('session:'))]) {
      const rest = this.layout.parse(name)?.rest;
      if (rest !== undefined && owners.some((owner) => rest.startsWith(`budget:${owner}`) || rest.startsWith(`session:${owner}`))) dropped.push(name);
    }
    await this.deleteKeys(dropped);
  }

  /** Deletes keys of any groups: one DEL per group (a Cluster refuses one across slots). */
  private async deleteKeys(names: readonly string[]): Promise<void> {
    const byGroup = new Map<number, string[]>();
    for (const name of names) {
      const index = this.layout.parse(name)?.group.index ?? 0;
      byGroup.set(index, [...(byGroup.get(index) ?? []), name]);
    }
    await this.guard(() => Promise.all([...byGroup.values()].map((group) => this.redis.del(...group))));
  }

  /** Every key of `kind` in every group, from every primary. */
  private scanKeys(kind: string): Promise<string[]> {
    return this.guard(() => scanEveryPrimary(this.redis, this.layout.pattern(kind)));
  }

  /** The budget's period spend in Redis, seeded from the ledger when its hash is missing. */
  async budgetSpent(check: BudgetCheck): Promise<bigint> {
    const group = await this.groupOfBudget(check.scope, check.id);
    const key = group.budget(check.scope, check.id, check.start, check.end);
    for (let attempt = 1; attempt <= 2; attempt++) {
      const spent = await this.guard(() => this.redis.hget(key, 'spent'));
      if (spent !== null) return BigInt(spent);
      await this.seedBudget(group, check);
    }
    throw new BookUnavailableError(`the Redis budget of ${check.scope} ${check.id} vanished right after seeding`);
  }

  /**
   * Live budget spends that differ from the ledger's sum for their period plus what live instances
   * have not written yet; a hash whose key or account is gone is skipped.
   */
  async budgetDrift(): Promise<BudgetDrift[]> {
    const names = await this.scanKeys('budget:');
    const drifts: BudgetDrift[] = [];
    for (const name of names) {
      const parsed = this.layout.parse(name);
      if (parsed === null) continue;
      const [scope, id, start, end] = parsed.rest.slice('budget:'.length).split(':');
      if (!isBudgetScope(scope) || id === undefined || start === undefined || end === undefined) continue;
      const hash = await this.guard(() => this.redis.hgetall(name));
      if (hash.spent === undefined) continue;
      let live = BigInt(hash.spent);
      for (const [field, value] of Object.entries(hash)) {
        if (field.startsWith('unwritten:') && (await this.guard(() => this.redis.exists(parsed.group.heartbeat(field.slice(10))))) === 1) live -= BigInt(value);
      }
      const ledger = await this.store.periodSpend(scope, id, new Date(Number(start)), new Date(Number(end)));
      if (live === ledger) continue;
      const drift: BudgetDrift = { scope, id, start: new Date(Number(start)), end: new Date(Number(end)), live, ledger };
      this.driftKeys.set(drift, name);
      drifts.push(drift);
    }
    return drifts;
  }

  async rebuildBudgets(drifts: readonly BudgetDrift[]): Promise<void> {
    const names: string[] = [];
    for (const drift of drifts) names.push(this.driftKeys.get(drift) ?? (await this.groupOfBudget(drift.scope, drift.id)).budget(drift.scope, drift.id, drift.start, drift.end));
    if (names.length > 0) await this.deleteKeys(names);
  }

  /** Safe with several instances sweeping at once: a hold is released by whichever script pops it. Every group's expiries are swept. */
  async releaseExpired(now: Date): Promise<number> {
    const released = await Promise.all(
      this.layout.groups.map((group) => this.script('releaseExpired', [group.holdExpiries()], [String(now.getTime()), String(SWEEP_BATCH), group.prefix])),
    );
    return released.reduce<number>((sum, count) => sum + Number(count), 0);
  }

  /** Changes a live key limit after the store's changed (null: no limit); a key not yet seeded reads it then. */
  async setKeyLimit(keyId: string, limit: bigint | null): Promise<void> {
    if (limit !== null) checkAmount('a key limit', limit, 0n);
    await this.script('setKeyLimit', [(await this.groupOfKey(keyId)).key(keyId)], [limit === null ? '' : String(limit)]);
  }

  async ping(): Promise<boolean> {
    try {
      // On a Cluster a PING goes to any node; the book answers only if the primary of every group's slot does.
      if (this.redis.isCluster) return (await Promise.all(this.layout.groups.map((group) => this.redis.exists(group.epoch())))).every((found) => found >= 0);
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    clearInterval(this.epochCheck);
    await Promise.all(this.layout.groups.map((group) => this.redis.del(group.heartbeat(this.instance)))).catch(() => undefined);
    // Nothing left on its way: seeds need not look at this instance again.
    await this.everyGroup(async (group) => {
      if ((await this.redis.hlen(group.undrained(this.instance))) === 0) await this.redis.srem(group.instances(), this.instance);
    }).catch(() => undefined);
    return closeRedis(this.redis);
  }

  /**
   * Writes the account's ledger balance, less what every live instance settled and the ledger does not
   * hold yet, to Redis unless someone already has; false when the store knows no such account. In
   * order: the probe (the fence, and each instance's store write under way for the account), the
   * ledger (the balance, and whether each of those writes is in it: looked up before and after the
   * balance, since a write that committed in between is in it or not), then the seed script, which
   * gives up ('busy': read again) if a credit or a ledger write for the account started or ended
   * since the probe. A write that hangs keeps its mark and is looked up, so it never blocks a seed.
   */
  private async seedAccount(accountId: string): Promise<boolean> {
    if ((await this.store.findAccountById(accountId)) === null) return false;
    const group = this.layout.groupOf(accountId);
    const { epoch: groupEpoch } = this.state(group);
    const fence = group.creditFence(accountId);
    for (let deadline = performance.now() + SEED_WAIT_MS, tries = 0; tries++ < SEED_MIN_TRIES || performance.now() < deadline; ) {
      // Seeded by someone else while this one waited out credits and transfers (which fence the
      // account for as long as they keep coming): nothing left to do.
      if ((await this.guard(() => this.redis.exists(group.account(accountId)))) === 1) return true;
      // Time spent waiting for a new epoch to open is not time spent racing credits and writes.
      const waitedFrom = performance.now();
      const epoch = await groupEpoch.open();
      deadline += performance.now() - waitedFrom;
      const probe = replyList(await this.script('seedProbe', [fence, group.instances()], [accountId, group.prefix])) as string[];
      const [inflight, gen] = probe;
      let wait = SEED_RETRY_MS;
      if (inflight === '0') {
        wait = SEED_RACE_RETRY_MS;
        const writes: { instance: string; writing: string }[] = [];
        for (let index = 2; index < probe.length; index += 2) writes.push({ instance: probe[index], writing: probe[index + 1] });
        const before = await this.recorded(writes);
        const { balance } = await this.store.balance(accountId);
        const after = await this.recorded(writes);
        // Committed between the two look-ups: the balance may or may not hold it.
        if (writes.every((_write, index) => before[index] === after[index])) {
          const resolved = writes.flatMap((write, index) => [write.instance, write.writing, after[index] ? '1' : '0']);
          const answer = await this.script('seedAccount', [group.account(accountId), fence, group.instances(), group.epoch()], [String(balance), gen, accountId, group.prefix, epoch, ...resolved]);
          if (answer === EPOCH_MOVED) {
            groupEpoch.moved();
            continue;
          }
          if (answer !== 'busy') return true;
        }
      }
      await delay(wait * Math.random() * 2);
    }
    throw new BookUnavailableError(`credits or ledger writes to account ${accountId} kept starting; its Redis balance could not be seeded`);
  }

  /** Whether the ledger holds each write's probe charge (a write is one transaction: all of it or none). */
  private recorded(writes: readonly { writing: string }[]): Promise<boolean[]> {
    return Promise.all(writes.map(async ({ writing }) => (await this.store.findCharge(writing.slice(0, writing.indexOf(' ')))) !== null));
  }

  /** Writes the budget's period spend from the ledger plus what live instances have not written yet, unless someone already has. */
  private async seedBudget(group: BookGroup, check: BudgetCheck): Promise<void> {
    const key = group.budget(check.scope, check.id, check.start, check.end);
    const expiry = String(check.end.getTime() + BUDGET_KEPT_AFTER_MS);
    await this.seedSpend(group, key, group.budgetField(key), group.spendFence(check.scope, check.id), 'budget', async () => ({
      spent: await this.store.periodSpend(check.scope, check.id, check.start, check.end),
      extra: expiry,
    }));
  }

  /**
   * Writes what the session was charged from the ledger (plus this instance's charges of it on their
   * way there) unless someone already has. A session's first hold seeds it, before any of its charges
   * exist; one seeded again (idle for a week, or Redis lost its state) misses another instance's
   * charges not yet in the ledger, as a period's does.
   */
  private async seedSession(group: BookGroup, check: SessionBudgetCheck): Promise<void> {
    const { epoch: groupEpoch } = this.state(group);
    for (;;) {
      const epoch = await groupEpoch.open();
      const ledger = await this.store.sessionSpend(check.scope, check.id, check.sessionId);
      const unwritten = this.unwritten((charge) => charge.sessionId === check.sessionId && countsIn(charge, check.scope, check.id));
      const keys = [group.session(check.scope, check.id, check.sessionId), group.epoch()];
      if ((await this.script('seedSession', keys, [String(ledger + unwritten), String(SESSION_KEPT_MS), epoch])) !== EPOCH_MOVED) return;
      groupEpoch.moved();
    }
  }

  /** Writes the key's spend (the store's plus what live instances have not written yet) and limit unless someone already has; false for an unknown key. */
  private async seedKey(accountId: string, keyId: string): Promise<boolean> {
    const read = async (): Promise<{ spent: bigint; extra: string } | null> => {
      const key = (await this.store.listKeys({ accountId })).find((candidate) => candidate.id === keyId);
      return key === undefined ? null : { spent: key.spent, extra: key.spendLimit === null ? '' : String(key.spendLimit) };
    };
    if ((await read()) === null) return false;
    const group = this.layout.groupOf(accountId);
    await this.seedSpend(group, group.key(keyId), spendField(keyId), group.spendFence('key', keyId), 'key', async () => (await read()) ?? { spent: 0n, extra: '' });
    return true;
  }

  /**
   * Writes a key's spend or a budget period's: the store's, plus what every live instance settled
   * that the store does not hold yet (their undrained fields), read in one step. As for an account:
   * the probe (the spend fence, and each write under way that lowers the field), the store (looking
   * each of those writes up before and after the spend is read), then the seed script, which gives up
   * ('busy': read again) if a ledger write touching the spend started or ended since the probe.
   */
  private async seedSpend(group: BookGroup, hash: string, field: string, fence: string, kind: 'key' | 'budget', read: () => Promise<{ spent: bigint; extra: string }>): Promise<void> {
    for (let deadline = performance.now() + SEED_WAIT_MS, tries = 0; tries++ < SEED_MIN_TRIES || performance.now() < deadline; ) {
      const waitedFrom = performance.now();
      const groupEpoch = this.state(group).epoch;
      const epoch = await groupEpoch.open();
      deadline += performance.now() - waitedFrom;
      const [gen, ...marks] = replyList(await this.script('spendProbe', [fence, group.instances()], [field, group.prefix])) as string[];
      const writes: { instance: string; writing: string }[] = [];
      for (let index = 0; index < marks.length; index += 2) writes.push({ instance: marks[index], writing: marks[index + 1] });
      const before = await this.recorded(writes);
      const { spent, extra } = await read();
      const after = await this.recorded(writes);
      if (writes.every((_write, index) => before[index] === after[index])) {
        const resolved = writes.flatMap((write, index) => [write.instance, write.writing, after[index] ? '1' : '0']);
        const answer = await this.script('seedSpend', [hash, fence, group.instances(), group.epoch()], [String(spent), gen, field, group.prefix, epoch, kind, extra, ...resolved]);
        if (answer === EPOCH_MOVED) {
          groupEpoch.moved();
          continue;
        }
        if (answer !== 'busy') return;
      }
      await delay(SEED_RACE_RETRY_MS * Math.random() * 2);
    }
    throw new BookUnavailableError(`ledger writes touching ${field} kept starting; its Redis spend could not be seeded`);
  }

  /** The credit's Redis step; retried, since it is marked done by its token and cannot apply twice. */
  private async endCredit(accountId: string, token: string, amount: bigint): Promise<void> {
    const group = this.layout.groupOf(accountId);
    const keys = [group.creditFence(accountId), group.account(accountId), group.creditDone(token)];
    const args = [String(amount), String(CREDIT_FENCE_TTL_S), String(CREDIT_DONE_TTL_S)];
    for (let attempt = 1; ; attempt++) {
      try {
        await this.script('creditEnd', keys, args);
        return;
      } catch (error) {
        if (attempt >= CREDIT_END_ATTEMPTS) throw error;
        await delay(SEED_RETRY_MS * attempt);
      }
    }
  }

  private script(name: BookScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.guard(() => this.run(name, keys, args));
  }

  /**
   * Sends `work` once the epoch has been looked at on this connection's server, and turns "Redis did
   * not answer" into `BookUnavailableError`; a script's own error stays what it is.
   */
  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      if (this.checkedConnection !== this.connection) await this.checkServer();
      return await work();
    } catch (error) {
      return this.unavailable(error);
    }
  }

  private unavailable(error: unknown): never {
    if (isReplyError(error) && !TRANSIENT_REPLY.test(error.message)) throw error;
    if (error instanceof BookUnavailableError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new BookUnavailableError(`the Redis balance book is unavailable: ${reason}`, { cause: error });
  }
}

/** The hash whose `held` a budget's holds are in: its account's, its key's, or its member's own (all in the account's group). */
function heldHash(group: BookGroup, budget: BudgetCheck, accountKey: string, keyKey: string): string {
  switch (budget.scope) {
    case 'key':
      return keyKey;
    case 'member':
      return group.member(budget.id);
    case 'account':
      return accountKey;
  }
}

function isBudgetScope(scope: string | undefined): scope is BudgetScope {
  return (BUDGET_SCOPES as readonly (string | undefined)[]).includes(scope);
}

/** A key's field in the undrained hashes: 'k:<key id>' (an account's is its bare id). */
function spendField(keyId: string): string {
  return `k:${keyId}`;
}

/** One undrained field's part of a ledger write: the amount it lowers, and one of its request ids. */
interface WriteShare {
  readonly probe: string;
  amount: bigint;
}

function checkAmount(what: string, amount: bigint, min: bigint): void {
  if (amount < min || amount > MAX_BOOK_AMOUNT) {
    throw new RangeError(`${what} of ${amount} nano-units is outside what the Redis book can hold exactly (${min} to 2^63 − 1)`);
  }
}

function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}

function replyList(reply: unknown): unknown[] {
  if (!Array.isArray(reply)) throw new Error(`unexpected reply from a book script: ${JSON.stringify(reply)}`);
  return reply;
}

function big(value: unknown): bigint {
  if (typeof value !== 'string') throw new Error(`expected an integer string from Redis, got ${JSON.stringify(value)}`);
  return BigInt(value);
}

function atLeastZero(value: bigint): bigint {
  return value < 0n ? 0n : value;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
