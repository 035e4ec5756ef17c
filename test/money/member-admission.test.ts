/**
 * A member's budget in the admission rule, on every balance book: an organisation with two members,
 * the first with two keys. What the member spent and holds through either of their keys counts
 * against their budget; the other member's spend counts against the organisation's budget and
 * balance only. The key's budget is checked before the member's, the member's before the account's,
 * and each book must give the same answer as `admit` on the same figures.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { periodAt } from '../../src/billing/budget-period';
import type { BalanceBook } from '../../src/billing/book';
import { budgetName } from '../../src/billing/budgets';
import { admit } from '../../src/money/admission';
import { memberBudgetId } from '../../src/store/budget-owner';
import type { BudgetCheck, BudgetScope, ChargeRecord, HoldResult } from '../../src/store/store';
import { bookSetups, type Setup } from '../helpers/balance-books';
import { PLAIN_CHARGE } from '../helpers/charges';

const AMOUNT = 100n;

interface Case {
  readonly name: string;
  readonly keyBudget?: bigint;
  readonly memberBudget?: bigint;
  readonly accountBudget?: bigint;
  /** Charged to the request's key today. */
  readonly spent: bigint;
  /** Held by a request of the member's other key. */
  readonly otherKeyHeld: bigint;
  /** Charged to the member's other key today. */
  readonly otherKeySpent: bigint;
  /** Charged to the other member's key today (the organisation's budget and balance only). */
  readonly otherMemberSpent: bigint;
}

const PLAIN = { spent: 50n, otherKeyHeld: 30n, otherKeySpent: 20n, otherMemberSpent: 400n } as const;

const CASES: readonly Case[] = [
  { ...PLAIN, name: "within the member's budget, with the other member's spend aside", memberBudget: 200n },
  { ...PLAIN, name: "over the member's budget by what their other key spent and holds", memberBudget: 199n },
  { ...PLAIN, name: "over the organisation's budget, not the member's", memberBudget: 500n, accountBudget: 599n },
  { ...PLAIN, name: "over the key's and the member's: the key's refuses", keyBudget: 149n, memberBudget: 150n },
  { ...PLAIN, name: "over the member's and the organisation's: the member's refuses", memberBudget: 150n, accountBudget: 550n },
  { ...PLAIN, name: 'an overage took the member past their budget', memberBudget: 60n, otherKeyHeld: 0n },
];

function budgetOf(scope: BudgetScope, id: string, amount: bigint): BudgetCheck {
  const { start, end } = periodAt(new Date(), 'day', 'UTC');
  return { scope, id, amount, period: 'day', timezone: 'UTC', start, end };
}

function chargeOf(accountId: string, keyId: string, memberAccountId: string, cost: bigint): ChargeRecord {
  return {
    accountId, keyId, memberAccountId, requestId: `req_${randomBytes(6).toString('hex')}`, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 1, cacheWriteTokens: 0,
    cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 1, imageInputTokens: 0, imageOutputTokens: 0, cost, ...PLAIN_CHARGE, usageSource: 'upstream',
    status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
  };
}

/** What the rule says, from the case's figures as the books should read them. */
function expected(c: Case, budgets: readonly BudgetCheck[]): HoldResult {
  const member = c.spent + c.otherKeySpent + c.otherKeyHeld;
  const taken = { key: c.spent, member, account: member + c.otherMemberSpent };
  return admit(AMOUNT, {
    balanceLeft: 10_000n - taken.account,
    keyLeft: null,
    budgets: budgets.map((budget) => ({ budget, left: budget.amount - taken[budget.scope] })),
  });
}

describe('money/admission: a member budget is named as the organisation\'s for the member', () => {
  it('says whose budget it is', () => {
    expect(budgetName({ scope: 'member', amount: 5_000_000_000n, period: 'day', timezone: 'UTC' })).to.equal("The organisation's daily budget for this member of 5 (UTC)");
    expect(budgetName({ scope: 'key', amount: 5_000_000_000n, period: 'week', timezone: 'UTC' })).to.equal("This API key's weekly budget of 5 (UTC)");
  });
});

for (const [name, open] of Object.entries(bookSetups('member-admission'))) {
  describe(`money/admission: the ${name} holds a member to their budget`, function () {
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

    async function settle(book: BalanceBook, record: ChargeRecord, budgets: readonly BudgetCheck[]): Promise<void> {
      await book.settle(record, budgets);
      await setup.store.recordCharges([record]);
      book.written([record]);
    }

    for (const c of CASES) {
      it(c.name, async () => {
        const { store, books } = setup;
        const tag = randomBytes(4).toString('hex');
        const [owner, other] = await Promise.all(['a', 'b'].map((who) => store.createAccount({ name: `mb${tag}${who}`, role: 'user' })));
        const org = await store.orgs.createOrganisation({ name: `mborg${tag}`, ownerId: owner.id });
        // The store keeps the membership; a second one is added as an accepted invitation would.
        const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: randomBytes(32), invitee: other.name, role: 'member', createdBy: owner.id, expiresAt: new Date(Date.now() + 60_000) });
        expect((await store.orgs.acceptInvitation(invitation.id, other.id, new Date())).ok).to.equal(true);
        const newKey = (member: string) => store.createKey({ accountId: org.id, memberAccountId: member, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd' });
        const [key, second, otherKey] = [await newKey(owner.id), await newKey(owner.id), await newKey(other.id)];
        await store.credit({ accountId: org.id, amount: 10_000n, kind: 'admin', actor: 'test', note: null });
        const memberId = memberBudgetId(org.id, owner.id);
        const budgetsOf = (keyId: string, member: string) => [
          ...(c.keyBudget === undefined || keyId !== key.id ? [] : [budgetOf('key', keyId, c.keyBudget)]),
          ...(c.memberBudget === undefined ? [] : [budgetOf('member', memberBudgetId(org.id, member), c.memberBudget)]),
          ...(c.accountBudget === undefined ? [] : [budgetOf('account', org.id, c.accountBudget)]),
        ];
        const budgets = budgetsOf(key.id, owner.id);
        const first = books[0];
        const last = books[books.length - 1];
        await settle(first, chargeOf(org.id, key.id, owner.id, c.spent), budgets);
        if (c.otherKeySpent > 0n) await settle(first, chargeOf(org.id, second.id, owner.id, c.otherKeySpent), budgetsOf(second.id, owner.id));
        if (c.otherMemberSpent > 0n) await settle(last, chargeOf(org.id, otherKey.id, other.id, c.otherMemberSpent), budgetsOf(otherKey.id, other.id));
        const expiresAt = new Date(Date.now() + 60_000);
        if (c.otherKeyHeld > 0n) {
          const earlier = await first.hold({ requestId: `held-${second.id}`, accountId: org.id, keyId: second.id, memberAccountId: owner.id, amount: c.otherKeyHeld, expiresAt, budgets: budgetsOf(second.id, owner.id) });
          expect(earlier, 'the earlier hold of the other key').to.deep.equal({ ok: true });
        }
        const result = await last.hold({ requestId: `req-${key.id}`, accountId: org.id, keyId: key.id, memberAccountId: owner.id, amount: AMOUNT, expiresAt, keyLimited: false, budgets });
        expect(result).to.deep.equal(expected(c, budgets));
        // The book's figure for the member's period: what their keys were charged, not the other member's.
        const member = budgets.find((budget) => budget.scope === 'member');
        if (member !== undefined) expect(await last.budgetSpent(member)).to.equal(c.spent + c.otherKeySpent);
        expect(member === undefined || member.id === memberId).to.equal(true);
      });
    }
  });
}
