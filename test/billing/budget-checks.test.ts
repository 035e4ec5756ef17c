/**
 * Which budgets a request is checked against: the key's, the member's (a member's key in an
 * organisation with a budget for them), the account's; narrowest first, each in its current period.
 */
import { expect } from 'chai';
import { PeriodCache } from '../../src/billing/budget-period';
import { budgetChecks } from '../../src/billing/budgets';
import { parseConfig } from '../../src/config/load';
import { memberBudgetId, memberOfBudget } from '../../src/store/budget-owner';
import type { Account, ApiKeyRecord, Budget } from '../../src/store/store';

const CONFIG = parseConfig('version: 1\nproviders: {}\nmodels: {}\n', 'checks.yaml', {});
const NOW = new Date('2026-03-04T12:00:00Z');
const DAY: Budget = { amount: 5_000_000_000n, period: 'day', timezone: 'UTC' };
const MONTH: Budget = { amount: 90_000_000_000n, period: 'month', timezone: 'Europe/Berlin' };

const org = { id: 'acc_org', name: 'acme', email: null, role: 'user', disabled: false, createdAt: NOW, budget: MONTH, sessionBudget: null } as Account;

function keyOf(memberAccountId: string | null, budget: Budget | null = null): ApiKeyRecord {
  return { id: 'key_1', accountId: org.id, memberAccountId, budget } as ApiKeyRecord;
}

describe('billing/budgets: the checks of a request', () => {
  it("lists the key's, the member's and the account's, narrowest first", () => {
    const checks = budgetChecks(CONFIG, org, keyOf('acc_bob', { ...DAY, amount: 1n }), DAY, NOW, new PeriodCache());
    expect(checks.map((check) => [check.scope, check.id])).to.deep.equal([
      ['key', 'key_1'],
      ['member', 'acc_org/acc_bob'],
      ['account', 'acc_org'],
    ]);
    expect(checks[1]).to.deep.include({ amount: DAY.amount, period: 'day', timezone: 'UTC', start: new Date('2026-03-04T00:00:00Z'), end: new Date('2026-03-05T00:00:00Z') });
  });

  it("leaves the member's out for an account's own key, and when the member has no budget", () => {
    expect(budgetChecks(CONFIG, org, keyOf(null), DAY, NOW, new PeriodCache()).map((check) => check.scope)).to.deep.equal(['account']);
    expect(budgetChecks(CONFIG, org, keyOf('acc_bob'), null, NOW, new PeriodCache()).map((check) => check.scope)).to.deep.equal(['account']);
    expect(budgetChecks(CONFIG, org, keyOf('acc_bob'), undefined, NOW, new PeriodCache()).map((check) => check.scope)).to.deep.equal(['account']);
  });

  it('names a member budget by its organisation and member, and reads them back', () => {
    expect(memberBudgetId('acc_org', 'acc_bob')).to.equal('acc_org/acc_bob');
    expect(memberOfBudget('acc_org/acc_bob')).to.deep.equal({ organisationId: 'acc_org', memberAccountId: 'acc_bob' });
    expect(() => memberOfBudget('acc_org')).to.throw('not a member budget id');
  });
});
