/**
 * Runs seeds of the simulator on one book: draws each operation from the seed and the model, applies
 * it to the model and to the book, and compares every observable after it (the live balance and held
 * amount, the 402 reason, and after each drain the ledger's rows and sums, what the charges cost
 * upstream and their margin, `verify`'s checks, the period spends and the book's own drift check). The first difference ends the seed with what it was,
 * where, and the operations that led there.
 */
import type { BudgetCheck, HoldResult } from '../../src/store/store';
import { BookSession, openRig, type Setup, type StoreName } from './books';
import { MoneyModel, type Admission, type ModelBudget } from './model';
import { ACCOUNTS, CODES, KEYS_PER_ACCOUNT, OpGenerator, Random, type Op } from './ops';
import { pendingFor, type PendingRule } from './pending';
import { orderCredit, priced, type Priced } from './world';
import { modelMember, orgSetupOf } from './orgs';

interface SeedFailure {
  readonly seed: number;
  readonly step: number;
  readonly rule: string;
  readonly detail: string;
  /** The operations up to and including the failing one (the last ones, when many). */
  readonly trail: readonly string[];
  readonly clock: number;
}

export interface StoreRun {
  readonly store: StoreName;
  /** Why the store was not run (a service absent), or null. */
  readonly skipped: string | null;
  readonly pending: readonly PendingRule[];
  readonly seeds: number;
  readonly ops: number;
  readonly failures: readonly SeedFailure[];
  /** Differences a pending rule covers, by rule: counted, not failed. */
  readonly tolerated: ReadonlyMap<string, number>;
  readonly ms: number;
}

export interface RunOptions {
  readonly store: StoreName;
  readonly seeds: readonly number[];
  readonly ops: number;
  /** Pending rules checked all the same (`true`: every one). */
  readonly check?: readonly string[] | true;
  /** Where the simulated clock starts (ms); default: a seed-drawn time in the next three weeks. */
  readonly clock?: number;
  /** Stop at the first failing seed. */
  readonly bail?: boolean;
}

class Mismatch extends Error {
  constructor(
    readonly rule: string,
    detail: string,
  ) {
    super(detail);
  }
}

const TIMEZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'Australia/Adelaide'];

function setupOf(seed: number): Setup {
  const r = new Random(seed ^ 0x5eed);
  const budget = (p: number) => (r.chance(p) ? { amount: r.big(2_000_000n, 25_000_000n), period: r.pick(['day', 'week', 'month'] as const), timezone: r.pick(TIMEZONES) } : null);
  const accounts = Array.from({ length: ACCOUNTS }, () => ({ budget: budget(0.5) }));
  const keys = Array.from({ length: ACCOUNTS * KEYS_PER_ACCOUNT }, (_, index) => ({
    account: Math.floor(index / KEYS_PER_ACCOUNT),
    spendLimit: r.chance(0.5) ? r.big(2_000_000n, 40_000_000n) : null,
    budget: budget(0.35),
  }));
  return { accounts, keys, codes: Array.from({ length: CODES }, () => r.big(1_000_000n, 6_000_000n)), org: orgSetupOf(seed) };
}

function clockOf(seed: number): number {
  const minute = 60_000;
  // Ahead of the real clock, not behind: Redis lets a budget hash expire two days after its period.
  return Math.floor(Date.now() / minute) * minute + new Random(seed ^ 0xc10c).int(0, 21 * 24 * 60) * minute;
}

function describe(op: Op): string {
  return JSON.stringify(op, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)).replace(/"text":"([^"]{12})[^"]*"/, (_all, start: string) => `"text":"${start}…"`);
}

function same(what: string, rule: string, actual: unknown, expected: unknown): void {
  if (actual !== expected) throw new Mismatch(rule, `${what}: the book says ${String(actual)}, the model ${String(expected)}`);
}

function modelBudgets(checks: readonly BudgetCheck[]): ModelBudget[] {
  return checks.map((check) => ({ scope: check.scope, id: check.id, amount: check.amount, start: check.start.getTime(), end: check.end.getTime() }));
}

function reasonOf(result: HoldResult | Admission): string {
  if (result.ok) return 'admitted';
  if (result.reason !== 'budget') return `${result.reason} (available ${result.available})`;
  const scope = 'scope' in result ? result.scope : result.budget.scope;
  return `${scope} budget (available ${result.available})`;
}

/** Which pending rule a difference of 402 reasons falls under, or 'admission' for none. */
function admissionRule(actual: HoldResult, expected: Admission): string {
  if (actual.ok || expected.ok) return 'admission';
  if (actual.reason !== expected.reason) return 'admission-order';
  if (actual.reason === 'budget' && expected.reason === 'budget' && actual.budget.scope !== expected.scope) return 'budget-order';
  return 'admission-available';
}

/** One seed on an open session. */
async function runSeed(session: BookSession, seed: number, ops: number, pending: readonly PendingRule[], clockStart: number, tolerated: Map<string, number>): Promise<SeedFailure | null> {
  const leftOut = new Set(pending.map((entry) => entry.rule));
  const tolerate = (rule: string): boolean => {
    if (!leftOut.has(rule)) return false;
    tolerated.set(rule, (tolerated.get(rule) ?? 0) + 1);
    return true;
  };
  const model = new MoneyModel();
  for (const account of session.accounts) model.addAccount(account.id);
  for (const key of session.keys) model.addKey(key.id, key.spendLimit, modelMember(key));
  const setup = setupOf(seed);
  setup.codes.forEach((amount, index) => model.addCode(String(index), amount));
  const generator = new OpGenerator(seed, session.abilities, leftOut);
  const trail: string[] = [];
  let clock = clockStart;
  let step = 0;

  const checkLive = async (rule: string, instance = 0): Promise<void> => {
    for (const [index, account] of session.accounts.entries()) {
      const live = await session.live(index, instance);
      same(`account ${index}'s balance`, rule, live.balance, model.balance(account.id));
      same(`account ${index}'s held amount`, rule, live.held, model.held('account', account.id));
    }
  };

  const checkWritten = async (rows = false): Promise<void> => {
    const written = session.written();
    for (let key = 0; key < session.keys.length; key++) {
      for (const check of session.budgets(key, clock)) {
        const expected = model.periodSpend({ scope: check.scope, id: check.id, start: check.start.getTime(), end: check.end.getTime() });
        for (let instance = 0; instance < session.abilities.instances; instance++) {
          same(`the ${check.scope} budget's period spend (${check.period}, ${check.timezone}) at instance ${instance}`, 'period-spend', await session.budgetSpent(check, instance), expected);
        }
        if (written) same(`the ledger's ${check.scope} period spend (${check.period}, ${check.timezone})`, 'period-spend', await session.store.periodSpend(check.scope, check.id, check.start, check.end), expected);
      }
    }
    if (!written) return;
    const ledger = await session.ledger(rows);
    for (const [index, account] of session.accounts.entries()) {
      const view = ledger.get(account.id)!;
      same(`account ${index}'s charges in the ledger`, 'ledger', view.charges, model.spent('account', account.id));
      if (view.chargeRows !== null) same(`account ${index}'s charge rows`, 'ledger', view.chargeRows, model.chargeCount(account.id));
      same(`account ${index}'s credits less debits`, 'ledger', view.credits - view.debits, model.funds(account.id));
      same(`verify: account ${index}'s stored balance against credits − charges − debits`, 'verify', view.balance, view.credits - view.charges - view.debits);
      same(`verify: account ${index}'s held against its open holds`, 'verify', view.held, view.openHolds);
      same(`account ${index}'s held amount in the store`, 'ledger', view.held, session.holdsInStore ? model.held('account', account.id) : 0n);
      const upstream = await session.upstream(index);
      const expected = model.upstream(account.id);
      same(`account ${index}'s upstream cost in the operator's summary`, 'upstream-cost', upstream.cost, expected.cost);
      same(`account ${index}'s margin in the operator's summary`, 'upstream-cost', upstream.margin, expected.margin);
      same(`account ${index}'s charges of unknown upstream cost`, 'upstream-cost', upstream.uncosted, expected.uncosted);
    }
    const drift = await session.drift();
    if (drift.length > 0) throw new Mismatch('verify', `the drift check finds ${drift.join('; ')}`);
  };

  const apply = async (op: Op): Promise<void> => {
    trail.push(`${step}: ${describe(op)}`);
    switch (op.kind) {
      case 'credit':
        await session.credit(op.account, op.amount);
        model.credit(session.accounts[op.account].id, op.amount);
        return checkLive('balance');
      case 'transfer': {
        const [from, to] = [session.accounts[op.from].id, session.accounts[op.to].id];
        const expected = model.transfer(from, to, op.amount);
        const actual = await session.transfer(op.from, op.to, op.amount);
        same(`a transfer of ${op.amount} from account ${op.from}`, 'transfer', actual.ok ? 'moved' : `refused (${actual.available} available)`, expected.ok ? 'moved' : `refused (${expected.available} available)`);
        return checkLive('balance');
      }
      case 'request': {
        const key = op.account * KEYS_PER_ACCOUNT + op.key;
        const request = priced(op);
        const { hold, honest } = request;
        const record = session.keys[key];
        const checks = session.budgets(key, clock);
        const expected = model.hold(op.id, record.accountId, record.id, hold, modelBudgets(checks));
        const actual = await session.hold(op, key, hold, clock);
        if (actual.ok !== expected.ok || reasonOf(actual) !== reasonOf(expected)) {
          const rule = admissionRule(actual, expected);
          if (!tolerate(rule)) throw new Mismatch(rule, `a hold of ${hold}: the book says ${reasonOf(actual)}, the model ${reasonOf(expected)}`);
        }
        if (expected.ok && op.settleNow) {
          for (const breach of model.settle(op.id, request.cost, request.upstreamCost, clock, honest)) if (!tolerate(breach.rule)) throw new Mismatch(breach.rule, breach.detail);
          await session.settle(op.id, request, clock);
        } else if (expected.ok) {
          pricedOpen.set(op.id, request);
        }
        return checkLive('balance', op.instance);
      }
      case 'settle': {
        const request = pricedOpen.get(op.request)!;
        pricedOpen.delete(op.request);
        for (const breach of model.settle(op.request, request.cost, request.upstreamCost, clock, request.honest)) if (!tolerate(breach.rule)) throw new Mismatch(breach.rule, breach.detail);
        await session.settle(op.request, request, clock);
        return checkLive('balance');
      }
      case 'drain':
        await session.drain();
        await checkLive('balance');
        return checkWritten();
      case 'redeem': {
        const result = await session.redeem(op.account, op.code);
        const expected = model.redeem(String(op.code));
        if (expected.ok) model.credit(session.accounts[op.account].id, expected.amount);
        same(`redeeming code ${op.code}`, 'redeem', result.ok ? `credited ${result.credit.amount}` : result.reason, expected.ok ? `credited ${expected.amount}` : expected.reason);
        return checkLive('redeem');
      }
      case 'order':
        await session.order(op);
        model.addOrder(String(op.order), session.accounts[op.account].id, op.minor, orderCredit(op.minor));
        return;
      case 'stripe':
        await session.stripe(op);
        model.payment(op.eventId, String(op.order), op.event === 'refund' ? { kind: 'refund', refundedMinor: op.minor } : op.event === 'dispute' ? { kind: 'dispute', minor: op.minor } : { kind: op.event });
        await checkLive('payments-order', op.instance);
        return checkWritten().catch((error: unknown) => {
          throw error instanceof Mismatch && error.rule === 'ledger' ? new Mismatch('payments-order', error.message) : error;
        });
      case 'tick':
        clock += op.ms;
        return checkWritten();
      case 'write_fails':
        session.writeFails(op.instance);
        return;
      case 'stall':
        session.stall(op.instance, op.on);
        return;
      case 'flush_redis':
        await session.flushRedis(op.drained);
        for (let instance = 0; instance < session.abilities.instances; instance++) await checkLive('redis-reseed', instance);
        return;
      case 'restart':
        await session.restart(op.instance);
        await checkLive('restart', op.instance);
        return checkWritten();
    }
  };

  const pricedOpen = new Map<string, Priced>();
  try {
    for (const [index] of session.accounts.entries()) await apply({ kind: 'credit', account: index, amount: new Random(seed + index).big(3_000_000n, 15_000_000n) });
    for (step = 0; step < ops; step++) await apply(generator.next(model.openHolds()));
    for (const op of generator.finish(model.openHolds())) {
      await apply(op);
      step += 1;
    }
    await checkWritten(true);
    return null;
  } catch (error) {
    const rule = error instanceof Mismatch ? error.rule : 'error';
    const detail = error instanceof Error ? (error instanceof Mismatch ? error.message : (error.stack ?? error.message)) : String(error);
    return { seed, step, rule, detail, trail: trail.slice(-12), clock: clockStart };
  }
}

/** Runs `options.seeds` on one store; a store whose services are absent is skipped, with the reason. */
export async function runStore(options: RunOptions): Promise<StoreRun> {
  const started = performance.now();
  const pending = pendingFor(options.store, options.check ?? []);
  const rig = await openRig(options.store);
  const tolerated = new Map<string, number>();
  const base = { store: options.store, pending, ops: options.ops, tolerated };
  if ('problem' in rig) return { ...base, skipped: rig.problem, seeds: 0, failures: [], ms: 0 };
  const failures: SeedFailure[] = [];
  let seeds = 0;
  try {
    for (const seed of options.seeds) {
      const session = await BookSession.open(rig, setupOf(seed));
      let failure: SeedFailure | null;
      try {
        failure = await runSeed(session, seed, options.ops, pending, options.clock ?? clockOf(seed), tolerated);
      } finally {
        await session.close();
      }
      seeds += 1;
      if (failure !== null) {
        failures.push(failure);
        if (options.bail) break;
      }
    }
  } finally {
    await rig.close();
  }
  return { ...base, skipped: null, seeds, failures, ms: performance.now() - started };
}

/** A run's report, as the CLI and the test print it. */
export function report(run: StoreRun, check: readonly string[] | true = []): string[] {
  const flags = check === true ? ' --strict' : check.map((rule) => ` --check ${rule}`).join('');
  const lines: string[] = [];
  if (run.skipped !== null) return [`${run.store}: skipped: ${run.skipped}`];
  lines.push(`${run.store}: ${run.seeds} seeds of ${run.ops} operations in ${(run.ms / 1000).toFixed(1)} s, ${run.failures.length} failing`);
  for (const entry of run.pending) lines.push(`  pending ${entry.rule}: ${entry.why}${run.tolerated.has(entry.rule) ? ` [${run.tolerated.get(entry.rule)} differences counted]` : ''}`);
  for (const failure of run.failures) {
    lines.push(`  seed ${failure.seed} fails ${failure.rule} at step ${failure.step}: ${failure.detail}`);
    lines.push(`    replay: npm run sim -- --store ${run.store} --seed ${failure.seed} --ops ${run.ops} --clock ${failure.clock}${flags}`);
    for (const line of failure.trail) lines.push(`    ${line}`);
  }
  return lines;
}
