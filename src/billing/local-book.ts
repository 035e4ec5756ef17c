/**
 * The balance book of an embedded store, which serves one gateway instance: holds live in this
 * process's memory, so a request costs no write transaction before it is forwarded. The store keeps
 * the truth (credits, charges, the balance they add up to); the book adds what the store does not
 * know yet: holds of requests under way, and charges settled but still queued for the ledger.
 *
 *   available = stored balance − charges queued for the ledger − holds
 *
 * Holds need no sweeper: they die with the process, and the ledger never saw them. The stored
 * balance is read once and kept while the store's funds revision (any other connection's commit,
 * this one's credits and redemptions) stays put and no charge of ours is written; so a credit written
 * by another process (the CLI) is read at the first hold of the next event-loop turn. Each account's check-and-hold runs
 * alone (a promise chain per account), because reading the store yields to other requests in between.
 */
import type { AccountBalance, BudgetCheck, BudgetScope, ChargeRecord, CreditRecord, Hold, HoldResult, KeySpend, NewCredit, RedeemResult, SessionBudgetCheck, SessionScope, Store } from '../store/store';
import { BUDGET_SCOPES, budgetOwnerOf, countsIn } from '../store/budget-owner';
import type { NewTransfer, TransferResult } from '../store/transfers';
import type { AdoptedCharge, BalanceBook } from './book';
import { admit } from '../money/admission';
import { heldSession } from '../store/held-session';

/** How many times a read overtaken by a written charge or a credit is done again before it is used unkept. */
const STALE_READS_RETRIED = 2;
/**
 * Session spends kept between holds, at most: agents open sessions without end, and a spend dropped
 * is only read again from the ledger (plus the queue) at its session's next hold.
 */
const KEPT_SESSIONS_MAX = 10_000;

/** How a session's spend and holds are named: per key or account, per session. */
function sessionName(scope: SessionScope, id: string, sessionId: string): string {
  return `${scope}:${id}:${sessionId}`;
}

/**
 * What a key or an account was charged in the period starting at `start`: the ledger's sum when first
 * asked, plus every charge settled here since (written to the ledger yet or not).
 */
interface PeriodSpend {
  readonly start: number;
  readonly end: number;
  spent: bigint;
}

/** A stored balance as read, and the store revision it was read at. */
interface StoredBalance {
  readonly balance: bigint;
  readonly revision: number;
}

function inPeriod(charge: ChargeRecord, start: number, end: number): boolean {
  const at = charge.createdAt.getTime();
  return at >= start && at < end;
}

function add(map: Map<string, bigint>, id: string, amount: bigint): void {
  const next = (map.get(id) ?? 0n) + amount;
  if (next === 0n) map.delete(id);
  else map.set(id, next);
}

export class LocalBook implements BalanceBook {
  /** The live figures are this process's, rebuilt at each start: nothing to check against the ledger. */
  readonly liveCopy = null;
  private readonly holds = new Map<string, Hold>();
  private readonly heldByAccount = new Map<string, bigint>();
  private readonly heldByKey = new Map<string, bigint>();
  /** What each member's holds hold, by member budget id (`memberBudgetId`). */
  private readonly heldByMember = new Map<string, bigint>();
  /** Charges settled here but not yet written to the ledger (the store's balance does not show them). */
  private readonly queuedByAccount = new Map<string, bigint>();
  private readonly queuedByKey = new Map<string, bigint>();
  private readonly turns = new Map<string, Promise<unknown>>();
  /** The store's balance per account, kept between holds (see storedBalance). */
  private readonly stored = new Map<string, StoredBalance>();
  /** Moved whenever a kept balance may have gone stale, so a read under way when it moves is not kept. */
  private generation = 0;
  /** Charges settled and not yet written, for the period spends read from the ledger meanwhile. */
  private readonly queued = new Map<string, ChargeRecord>();
  /** Moved whenever a queued charge reaches the ledger, so a period spend read across it is read again. */
  private writtenGeneration = 0;
  private readonly periodSpends = new Map<string, PeriodSpend>();
  /** What each session was charged (ledger and queue), kept from its first read, oldest first. */
  private readonly sessionSpends = new Map<string, bigint>();
  /** What each session's holds hold, by key and by account (`sessionName`). */
  private readonly heldBySession = new Map<string, bigint>();

  constructor(private readonly store: Store) {}

  hold(hold: Hold): Promise<HoldResult> {
    // No turn under way for the account and all the check reads already kept: checked and held at once,
    // with no turn queued (four promises and an async step fewer for a plain request; docs/benchmarks.md).
    if (!this.turns.has(hold.accountId)) {
      const known = this.holdKnown(hold);
      if (known !== null) return Promise.resolve(known);
    }
    return this.inTurn(hold.accountId, () => this.holdNow(hold));
  }

  /**
   * In the source's turn, so no hold on it is judged meanwhile: the store's transaction judges the
   * transfer on its balance less what this book holds and has not written for the account.
   */
  transfer(input: NewTransfer): Promise<TransferResult> {
    return this.inTurn(input.fromAccountId, async () => {
      const alsoHeld = (this.queuedByAccount.get(input.fromAccountId) ?? 0n) + (this.heldByAccount.get(input.fromAccountId) ?? 0n);
      try {
        return await this.store.transfers.transfer(input, alsoHeld);
      } finally {
        this.forget(input.fromAccountId);
        this.forget(input.toAccountId);
      }
    });
  }

  /** One check at a time per account (a hold, a transfer from it); other accounts are not held up. */
  private inTurn<T>(accountId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.turns.get(accountId) ?? Promise.resolve();
    const turn = previous.then(work);
    const settled = turn.catch(() => undefined);
    this.turns.set(accountId, settled);
    void settled.then(() => {
      if (this.turns.get(accountId) === settled) this.turns.delete(accountId);
    });
    return turn;
  }

  async settle(charge: ChargeRecord): Promise<void> {
    const hold = this.holds.get(charge.requestId);
    if (hold !== undefined) this.release(hold);
    if (charge.cost > 0n) {
      add(this.queuedByAccount, charge.accountId, charge.cost);
      add(this.queuedByKey, charge.keyId, charge.cost);
      this.queued.set(charge.requestId, charge);
      for (const scope of BUDGET_SCOPES) this.countInPeriod(scope, charge);
      if (charge.sessionId != null) {
        this.countInSession(sessionName('account', charge.accountId, charge.sessionId), charge.cost);
        this.countInSession(sessionName('key', charge.keyId, charge.sessionId), charge.cost);
      }
    }
  }

  /** Charges replayed from the outbox: settled before this process, not in the store's balance yet. */
  async adopt(charges: readonly AdoptedCharge[]): Promise<void> {
    for (const { charge } of charges) {
      if (charge.cost === 0n) continue;
      add(this.queuedByAccount, charge.accountId, charge.cost);
      add(this.queuedByKey, charge.keyId, charge.cost);
      this.queued.set(charge.requestId, charge);
    }
  }

  budgetSpent(check: BudgetCheck): Promise<bigint> {
    return this.periodSpend(check);
  }

  /** Not needed: this book keeps its own record of the queued charges (`settle`, `adopt`, `written`). */
  countUnwritten(): void {}

  /** The ledger writer wrote these charges: the store's balance now includes them. */
  written(charges: readonly ChargeRecord[]): void {
    this.generation += 1;
    this.writtenGeneration += 1;
    for (const charge of charges) {
      if (charge.cost === 0n) continue;
      this.queued.delete(charge.requestId);
      // The stored balance now includes this charge: read it again rather than reckon it here.
      this.stored.delete(charge.accountId);
      add(this.queuedByAccount, charge.accountId, -charge.cost);
      add(this.queuedByKey, charge.keyId, -charge.cost);
    }
  }

  async credit(input: NewCredit): Promise<CreditRecord> {
    // The store's funds revision moves too; dropping the kept balance here does not depend on it.
    const credit = await this.store.credit(input);
    this.forget(input.accountId);
    return credit;
  }

  async redeem(codeHash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    const result = await this.store.redeemCode(codeHash, accountId, actor);
    this.forget(accountId);
    return result;
  }

  async applyStored<T>(accountId: string, write: () => Promise<T>): Promise<T> {
    const result = await write();
    this.forget(accountId);
    return result;
  }

  async balance(accountId: string): Promise<AccountBalance> {
    const stored = await this.store.balance(accountId);
    return { balance: stored.balance - (this.queuedByAccount.get(accountId) ?? 0n), held: this.heldByAccount.get(accountId) ?? 0n };
  }

  /** Nothing expires: a hold lives as long as its request, and the process. */
  async releaseExpired(): Promise<number> {
    return 0;
  }

  ping(): Promise<boolean> {
    return this.store.ping();
  }

  async close(): Promise<void> {}

  private async holdNow(hold: Hold): Promise<HoldResult> {
    if (this.holds.has(hold.requestId)) throw new Error(`request ${hold.requestId} already holds funds`);
    const balance = await this.storedBalance(hold.accountId);
    const spend = hold.keyLimited === false ? null : await this.store.keySpend(hold.keyId);
    const budgets = [];
    for (const budget of hold.budgets ?? []) {
      const held = this.heldBy(budget.scope).get(budget.id) ?? 0n;
      budgets.push({ budget, left: budget.amount - (await this.periodSpend(budget)) - held });
    }
    const sessionBudgets = [];
    for (const budget of hold.sessionBudgets ?? []) {
      const held = this.heldBySession.get(sessionName(budget.scope, budget.id, budget.sessionId)) ?? 0n;
      sessionBudgets.push({ budget, spent: await this.sessionSpend(budget), held });
    }
    return this.admitAndHold(hold, balance, spend, budgets, sessionBudgets);
  }

  /**
   * `holdNow` without a store read, when the stored balance, the key's spend (none needed) and every
   * budget's and session's spend are kept: null when any is not. Runs only while no turn of the account
   * is under way, and has no await, so no other check of the account can come between.
   */
  private holdKnown(hold: Hold): HoldResult | null {
    if (hold.keyLimited !== false || this.holds.has(hold.requestId)) return null;
    const revision = this.store.fundsRevision?.('turn');
    const kept = this.stored.get(hold.accountId);
    if (revision === undefined || kept === undefined || kept.revision !== revision) return null;
    const budgets = [];
    for (const budget of hold.budgets ?? []) {
      const spent = this.keptPeriodSpend(budget);
      if (spent === undefined) return null;
      budgets.push({ budget, left: budget.amount - spent - (this.heldBy(budget.scope).get(budget.id) ?? 0n) });
    }
    const sessionBudgets = [];
    for (const budget of hold.sessionBudgets ?? []) {
      const spent = this.sessionSpends.get(sessionName(budget.scope, budget.id, budget.sessionId));
      if (spent === undefined) return null;
      sessionBudgets.push({ budget, spent, held: this.heldBySession.get(sessionName(budget.scope, budget.id, budget.sessionId)) ?? 0n });
    }
    return this.admitAndHold(hold, kept.balance, null, budgets, sessionBudgets);
  }

  /** The check itself, once every figure is read, and the hold when it passes. */
  private admitAndHold(
    hold: Hold,
    balance: bigint,
    spend: KeySpend | null,
    budgets: { budget: BudgetCheck; left: bigint }[],
    sessionBudgets: { budget: SessionBudgetCheck; spent: bigint; held: bigint }[],
  ): HoldResult {
    const admission = admit(hold.amount, {
      balanceLeft: balance - (this.queuedByAccount.get(hold.accountId) ?? 0n) - (this.heldByAccount.get(hold.accountId) ?? 0n),
      keyLeft: spend?.spendLimit == null ? null : spend.spendLimit - spend.spent - (this.queuedByKey.get(hold.keyId) ?? 0n) - (this.heldByKey.get(hold.keyId) ?? 0n),
      budgets,
      sessionBudgets,
    });
    if (!admission.ok) return admission;
    this.holds.set(hold.requestId, hold);
    add(this.heldByAccount, hold.accountId, hold.amount);
    add(this.heldByKey, hold.keyId, hold.amount);
    this.holdByMember(hold, hold.amount);
    this.holdInSession(hold, hold.amount);
    return { ok: true };
  }

  /** Where what a budget's scope holds is kept. */
  private heldBy(scope: BudgetScope): Map<string, bigint> {
    switch (scope) {
      case 'key':
        return this.heldByKey;
      case 'member':
        return this.heldByMember;
      case 'account':
        return this.heldByAccount;
    }
  }

  /** A member's key's hold counts against the member's budget, whichever of their keys holds it. */
  private holdByMember(hold: Hold, amount: bigint): void {
    const member = budgetOwnerOf(hold, 'member');
    if (member !== null) add(this.heldByMember, member, amount);
  }

  /** A hold checked against session budgets counts against its session, by key and by account. */
  private holdInSession(hold: Hold, amount: bigint): void {
    const session = heldSession(hold);
    if (session === null) return;
    add(this.heldBySession, sessionName('account', hold.accountId, session), amount);
    add(this.heldBySession, sessionName('key', hold.keyId, session), amount);
  }

  /**
   * What the session was charged: kept from the first read, moved by every charge settled here since.
   * Read as the ledger's sum plus the charges still queued for it, again when a ledger write overtook
   * the read (as a period's spend is).
   */
  private async sessionSpend(check: SessionBudgetCheck): Promise<bigint> {
    const name = sessionName(check.scope, check.id, check.sessionId);
    const kept = this.sessionSpends.get(name);
    if (kept !== undefined) return kept;
    for (;;) {
      const generation = this.writtenGeneration;
      const ledger = await this.store.sessionSpend(check.scope, check.id, check.sessionId);
      if (generation !== this.writtenGeneration) continue;
      const again = this.sessionSpends.get(name);
      if (again !== undefined) return again;
      let spent = ledger;
      for (const charge of this.queued.values()) {
        if (charge.sessionId === check.sessionId && countsIn(charge, check.scope, check.id)) spent += charge.cost;
      }
      this.sessionSpends.set(name, spent);
      // The oldest kept spend goes first; Map keeps insertion order.
      if (this.sessionSpends.size > KEPT_SESSIONS_MAX) this.sessionSpends.delete(this.sessionSpends.keys().next().value!);
      return spent;
    }
  }

  private countInSession(name: string, cost: bigint): void {
    const kept = this.sessionSpends.get(name);
    if (kept !== undefined) this.sessionSpends.set(name, kept + cost);
  }

  /**
   * The account's balance in the store: the kept one while the store's revision has not moved, else
   * read (again when a charge was written or funds added while reading, so a stale read is never kept).
   */
  private async storedBalance(accountId: string): Promise<bigint> {
    // As of this event-loop turn: another process's commit (the CLI's credit) is seen from the next
    // turn on, and every hold of a turn shares one read of the file's version instead of one each.
    const revision = this.store.fundsRevision?.('turn');
    if (revision === undefined) return (await this.store.balance(accountId)).balance;
    const kept = this.stored.get(accountId);
    if (kept !== undefined && kept.revision === revision) return kept.balance;
    let balance = 0n;
    for (let read = 0; read < STALE_READS_RETRIED + 1; read++) {
      const generation = this.generation;
      ({ balance } = await this.store.balance(accountId));
      if (generation !== this.generation) continue;
      this.stored.set(accountId, { balance, revision });
      return balance;
    }
    // Charges kept landing while reading: this read is as good as one without the kept balance; not kept.
    return balance;
  }

  /**
   * The budget's spend in its period: kept from the first read, moved by every charge settled here
   * since. Read as the ledger's sum plus the charges still queued for it; a read that a ledger write
   * overtook is done again (the write may or may not be in the sum, the queue no longer has it).
   */
  /** The budget's spend in its period when it is kept, else undefined. */
  private keptPeriodSpend(check: BudgetCheck): bigint | undefined {
    const kept = this.periodSpends.get(`${check.scope}:${check.id}`);
    return kept !== undefined && kept.start === check.start.getTime() ? kept.spent : undefined;
  }

  private async periodSpend(check: BudgetCheck): Promise<bigint> {
    const name = `${check.scope}:${check.id}`;
    const start = check.start.getTime();
    const end = check.end.getTime();
    const kept = this.periodSpends.get(name);
    if (kept !== undefined && kept.start === start) return kept.spent;
    for (;;) {
      const generation = this.writtenGeneration;
      const ledger = await this.store.periodSpend(check.scope, check.id, check.start, check.end);
      if (generation !== this.writtenGeneration) continue;
      const again = this.periodSpends.get(name);
      if (again !== undefined && again.start === start) return again.spent;
      let spent = ledger;
      for (const charge of this.queued.values()) {
        if (countsIn(charge, check.scope, check.id) && inPeriod(charge, start, end)) spent += charge.cost;
      }
      this.periodSpends.set(name, { start, end, spent });
      return spent;
    }
  }

  /** A settled charge moves the kept spend of its period, if that period is the one kept. */
  private countInPeriod(scope: BudgetScope, charge: ChargeRecord): void {
    const id = budgetOwnerOf(charge, scope);
    if (id === null) return;
    const kept = this.periodSpends.get(`${scope}:${id}`);
    if (kept !== undefined && inPeriod(charge, kept.start, kept.end)) kept.spent += charge.cost;
  }

  private forget(accountId: string): void {
    this.generation += 1;
    this.stored.delete(accountId);
  }

  private release(hold: Hold): void {
    this.holds.delete(hold.requestId);
    add(this.heldByAccount, hold.accountId, -hold.amount);
    add(this.heldByKey, hold.keyId, -hold.amount);
    this.holdByMember(hold, -hold.amount);
    this.holdInSession(hold, -hold.amount);
  }
}
