/**
 * The admission rule, and every balance book held to it: one table of cases (a balance, a key's spend
 * limit, its daily budget and its account's, their session budgets, what was charged and what is held,
 * in the request's session and outside it) runs through `admit`
 * and through each book's own hold (the in-process book, SQLite's and PostgreSQL's rows, the Redis
 * script), and each must give the same answer: admitted, or refused for the same reason with the same
 * figure available.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { periodAt } from '../../src/billing/budget-period';
import type { BalanceBook } from '../../src/billing/book';
import { admit } from '../../src/money/admission';
import type { BudgetCheck, BudgetScope, ChargeRecord, HoldResult, SessionBudgetCheck } from '../../src/store/store';
import { bookSetups, type Setup } from '../helpers/balance-books';
import { PLAIN_CHARGE } from '../helpers/charges';

const AMOUNT = 100n;

interface Case {
  readonly name: string;
  readonly credit: bigint;
  /** The request's key's spend limit; null for none. */
  readonly limit: bigint | null;
  readonly keyBudget: bigint | null;
  readonly accountBudget: bigint | null;
  /** Charged to the request's key today (balance, key spend and both budgets). */
  readonly spent: bigint;
  /** Held by another request of the same key. */
  readonly held: bigint;
  /** Charged to another key of the account today (the balance and the account's budget only). */
  readonly otherSpent: bigint;
  readonly keySessionBudget?: bigint;
  readonly accountSessionBudget?: bigint;
  /** Charged to the request's key in the request's session (every limit). */
  readonly sessionSpent?: bigint;
  /** Held by another request of the same key in the request's session. */
  readonly sessionHeld?: bigint;
  /** Charged to the request's key in another session (all but the session budgets). */
  readonly otherSessionSpent?: bigint;
  /** Charged to another key of the account in the request's session (the account's limits only). */
  readonly otherKeySessionSpent?: bigint;
}

const PLAIN = { credit: 1_000n, limit: null, keyBudget: null, accountBudget: null, spent: 0n, held: 0n, otherSpent: 0n } as const;

const CASES: readonly Case[] = [
  { ...PLAIN, name: 'within every limit', limit: 500n, keyBudget: 500n, accountBudget: 500n, spent: 50n, held: 50n, otherSpent: 50n },
  { ...PLAIN, name: 'exactly what each limit leaves', credit: 400n, limit: 300n, keyBudget: 300n, accountBudget: 400n, spent: 100n, held: 100n, otherSpent: 100n },
  { ...PLAIN, name: 'over the balance only', credit: 250n, limit: 500n, keyBudget: 500n, accountBudget: 500n, spent: 50n, held: 50n, otherSpent: 60n },
  { ...PLAIN, name: 'over the key spend limit only', limit: 230n, keyBudget: 500n, accountBudget: 500n, spent: 50n, held: 90n },
  { ...PLAIN, name: "over the key's budget only", limit: 500n, keyBudget: 199n, accountBudget: 500n, spent: 50n, held: 50n },
  { ...PLAIN, name: "over the account's budget only", keyBudget: 500n, accountBudget: 290n, spent: 50n, held: 50n, otherSpent: 100n },
  { ...PLAIN, name: "over the balance and the key's daily budget (the issue's case)", credit: 120n, keyBudget: 120n, spent: 30n },
  { ...PLAIN, name: 'over the key spend limit and both budgets', limit: 120n, keyBudget: 110n, accountBudget: 105n, spent: 30n },
  { ...PLAIN, name: 'over both budgets', keyBudget: 150n, accountBudget: 150n, spent: 60n, held: 20n },
  { ...PLAIN, name: 'over every limit', credit: 120n, limit: 120n, keyBudget: 120n, accountBudget: 120n, spent: 30n, held: 10n },
  { ...PLAIN, name: 'an overage took the balance below zero', credit: 100n, keyBudget: 10_000n, spent: 150n },
  { ...PLAIN, name: 'an overage took the key below its limit', limit: 100n, spent: 150n },
  { ...PLAIN, name: 'within both session budgets', keySessionBudget: 500n, accountSessionBudget: 500n, sessionSpent: 100n, sessionHeld: 100n, otherSessionSpent: 300n },
  { ...PLAIN, name: 'exactly what the session budget leaves', keySessionBudget: 300n, sessionSpent: 100n, sessionHeld: 100n },
  { ...PLAIN, name: "over the key's session budget only, another session's spend aside", keySessionBudget: 299n, accountSessionBudget: 500n, sessionSpent: 100n, sessionHeld: 100n, otherSessionSpent: 500n },
  { ...PLAIN, name: "another session's spend does not count against this session", keySessionBudget: 200n, otherSessionSpent: 500n },
  { ...PLAIN, name: "over the account's session budget, spent through another key", keySessionBudget: 500n, accountSessionBudget: 250n, sessionSpent: 50n, otherKeySessionSpent: 120n },
  { ...PLAIN, name: 'over a daily budget and the session budget: the daily budget refuses', keyBudget: 150n, keySessionBudget: 150n, sessionSpent: 60n },
  { ...PLAIN, name: "over both session budgets: the key's refuses", keySessionBudget: 150n, accountSessionBudget: 150n, sessionSpent: 60n, sessionHeld: 20n },
  { ...PLAIN, name: 'over the balance and the session budget: the balance refuses', credit: 150n, keySessionBudget: 120n, sessionSpent: 60n },
  { ...PLAIN, name: 'an overage took the session past its budget', keySessionBudget: 100n, sessionSpent: 150n },
];

function budgetOf(scope: BudgetScope, id: string, amount: bigint): BudgetCheck {
  const { start, end } = periodAt(new Date(), 'day', 'UTC');
  return { scope, id, amount, period: 'day', timezone: 'UTC', start, end };
}

function chargeOf(accountId: string, keyId: string, cost: bigint, sessionId: string | null = null): ChargeRecord {
  return {
    accountId, keyId, requestId: `req_${randomBytes(6).toString('hex')}`, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 1, cacheWriteTokens: 0,
    cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 1, imageInputTokens: 0, imageOutputTokens: 0, cost, ...PLAIN_CHARGE, usageSource: 'upstream',
    status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(), sessionId,
  };
}

/** What the rule says for a case, from its figures as the books should read them. */
function expected(c: Case, budgets: readonly BudgetCheck[], sessionBudgets: readonly SessionBudgetCheck[]): HoldResult {
  const inSession = (c.sessionSpent ?? 0n) + (c.sessionHeld ?? 0n);
  const taken = c.spent + c.held + inSession + (c.otherSessionSpent ?? 0n);
  const otherKey = c.otherSpent + (c.otherKeySessionSpent ?? 0n);
  return admit(AMOUNT, {
    balanceLeft: c.credit - taken - otherKey,
    keyLeft: c.limit === null ? null : c.limit - taken,
    budgets: budgets.map((budget) => ({ budget, left: budget.amount - taken - (budget.scope === 'account' ? otherKey : 0n) })),
    sessionBudgets: sessionBudgets.map((budget) => ({
      budget,
      spent: (c.sessionSpent ?? 0n) + (budget.scope === 'account' ? (c.otherKeySessionSpent ?? 0n) : 0n),
      held: c.sessionHeld ?? 0n,
    })),
  });
}

describe('money/admission: the rule', () => {
  const budget = budgetOf('key', 'k', 100n);

  it('refuses for the balance first, then the key spend limit, then each budget in the order given', () => {
    const over = { balanceLeft: 10n, keyLeft: 20n, budgets: [{ budget, left: 30n }] };
    expect(admit(AMOUNT, over)).to.deep.equal({ ok: false, reason: 'balance', available: 10n });
    expect(admit(AMOUNT, { ...over, balanceLeft: 100n })).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 20n });
    expect(admit(AMOUNT, { ...over, balanceLeft: 100n, keyLeft: null })).to.deep.equal({ ok: false, reason: 'budget', budget, available: 30n });
    const second = budgetOf('account', 'a', 100n);
    expect(admit(AMOUNT, { balanceLeft: 100n, keyLeft: null, budgets: [{ budget, left: 100n }, { budget: second, left: 99n }] })).to.deep.equal({
      ok: false, reason: 'budget', budget: second, available: 99n,
    });
  });

  it('admits what each limit leaves exactly, and says 0 is available where an overage left less than nothing', () => {
    expect(admit(AMOUNT, { balanceLeft: 100n, keyLeft: 100n, budgets: [{ budget, left: 100n }] })).to.deep.equal({ ok: true });
    expect(admit(AMOUNT, { balanceLeft: -5n, keyLeft: null, budgets: [] })).to.deep.equal({ ok: false, reason: 'balance', available: 0n });
    expect(admit(AMOUNT, { balanceLeft: 500n, keyLeft: -1n, budgets: [] })).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 0n });
  });

  it('checks session budgets after every budget of a period, counting what the session spent and holds', () => {
    const session = { scope: 'key', id: 'k', sessionId: 's1', amount: 300n } as const;
    const figures = { balanceLeft: 1_000n, keyLeft: null, budgets: [{ budget, left: 99n }], sessionBudgets: [{ budget: session, spent: 150n, held: 60n }] };
    expect(admit(AMOUNT, figures)).to.deep.equal({ ok: false, reason: 'budget', budget, available: 99n });
    expect(admit(AMOUNT, { ...figures, budgets: [] })).to.deep.equal({ ok: false, reason: 'session_budget', budget: session, spent: 150n, available: 90n });
    expect(admit(AMOUNT, { ...figures, budgets: [], sessionBudgets: [{ budget: session, spent: 150n, held: 50n }] })).to.deep.equal({ ok: true });
    expect(admit(AMOUNT, { ...figures, budgets: [], sessionBudgets: [{ budget: session, spent: 400n, held: 0n }] })).to.deep.equal({
      ok: false, reason: 'session_budget', budget: session, spent: 400n, available: 0n,
    });
  });
});

for (const [name, open] of Object.entries(bookSetups('admission'))) {
  describe(`money/admission: the ${name} follows the rule`, function () {
    this.timeout(20_000);
    let setup: Setup;

    before(async function () {
      const opened = await open();
      if (typeof opened === 'string') {
        console.log(`      ${opened}: skipped`);
        this.skip();
      }
      setup = opened;
    });

    after(async () => setup?.close());

    /** Settles in the book and writes to the ledger, as billing and its ledger writer do. */
    async function settle(book: BalanceBook, record: ChargeRecord, budgets: readonly BudgetCheck[]): Promise<void> {
      await book.settle(record, budgets);
      await setup.store.recordCharges([record]);
      book.written([record]);
    }

    for (const c of CASES) {
      it(c.name, async () => {
        const { store, books } = setup;
        const account = await store.createAccount({ name: `adm${randomBytes(4).toString('hex')}`, role: 'user' });
        const newKey = (spendLimit: bigint | null) => store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd', spendLimit });
        const key = await newKey(c.limit);
        const other = await newKey(null);
        await store.credit({ accountId: account.id, amount: c.credit, kind: 'admin', actor: 'test', note: null });
        const budgets = [
          ...(c.keyBudget === null ? [] : [budgetOf('key', key.id, c.keyBudget)]),
          ...(c.accountBudget === null ? [] : [budgetOf('account', account.id, c.accountBudget)]),
        ];
        const sessionId = `sess-${randomBytes(4).toString('hex')}`;
        const sessionBudgets: SessionBudgetCheck[] = [
          ...(c.keySessionBudget === undefined ? [] : [{ scope: 'key', id: key.id, sessionId, amount: c.keySessionBudget } as const]),
          ...(c.accountSessionBudget === undefined ? [] : [{ scope: 'account', id: account.id, sessionId, amount: c.accountSessionBudget } as const]),
        ];
        const first = books[0];
        const last = books[books.length - 1];
        if (c.spent > 0n) await settle(first, chargeOf(account.id, key.id, c.spent), budgets);
        if (c.otherSpent > 0n) await settle(first, chargeOf(account.id, other.id, c.otherSpent), budgets.filter((budget) => budget.scope === 'account'));
        if ((c.sessionSpent ?? 0n) > 0n) await settle(first, chargeOf(account.id, key.id, c.sessionSpent!, sessionId), budgets);
        if ((c.otherSessionSpent ?? 0n) > 0n) await settle(first, chargeOf(account.id, key.id, c.otherSessionSpent!, `${sessionId}-other`), budgets);
        if ((c.otherKeySessionSpent ?? 0n) > 0n) {
          await settle(first, chargeOf(account.id, other.id, c.otherKeySessionSpent!, sessionId), budgets.filter((budget) => budget.scope === 'account'));
        }
        const expiresAt = new Date(Date.now() + 60_000);
        if (c.held > 0n) {
          const earlier = await first.hold({ requestId: `held-${key.id}`, accountId: account.id, keyId: key.id, amount: c.held, expiresAt });
          expect(earlier, 'the earlier hold of the setup').to.deep.equal({ ok: true });
        }
        if ((c.sessionHeld ?? 0n) > 0n) {
          // Held by a request of the session under way, checked against the same session budgets as the next.
          const earlier = await first.hold({ requestId: `session-held-${key.id}`, accountId: account.id, keyId: key.id, amount: c.sessionHeld!, expiresAt, sessionBudgets });
          expect(earlier, 'the earlier hold of the session').to.deep.equal({ ok: true });
        }
        const result = await last.hold({
          requestId: `req-${key.id}`, accountId: account.id, keyId: key.id, amount: AMOUNT, expiresAt, keyLimited: c.limit !== null, budgets,
          ...(sessionBudgets.length === 0 ? {} : { sessionBudgets }),
        });
        expect(result).to.deep.equal(expected(c, budgets, sessionBudgets));
      });
    }
  });
}
