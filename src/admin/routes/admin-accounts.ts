/** Administrators: every account, creating and disabling accounts, crediting them with a note. */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { AccountExistsError, type Account } from '../../store/store';
import { ApiError, invalid, notFound } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { accountName, amount, boolean, newPassword, optionalAmount, optionalBudget, optionalEmail, requiredString } from '../fields';
import { readJsonObject } from '../json-body';
import { accountQuery, listAccounts } from '../account-listing';
import { limitParam, offsetParam, single } from './query';
import { hashPassword } from '../../auth/passwords';
import { accountSummaryView, accountView, creditView, debitView } from '../views';
import { audit } from '../audit';
import { accountBudgetChanged, accountSessionBudgetChanged, credited, debited, disabledChanged } from '../../audit/states';

export function adminAccountRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const admin = [signedIn(deps), adminOnly] as const;

  async function accountParam(ctx: ApiContext): Promise<Account> {
    const account = await deps.store.findAccountById((ctx.params as Readonly<Record<string, string>>).id);
    if (account === null) throw notFound('This account');
    return account;
  }

  // Every account (other pages choose from them), or with `limit` one page of them; `q`, `sort` and
  // `order` search and sort either way, and `total` counts every match.
  router.get('/admin/accounts', ...admin, async (ctx) => {
    const query = accountQuery(ctx.query);
    const [all, lastRequests] = await Promise.all([deps.store.listAccounts(), deps.store.lastRequests()]);
    const matching = listAccounts(all, lastRequests, query);
    const paged = single(ctx.query.limit, 'limit') !== undefined;
    const offset = offsetParam(ctx.query.offset);
    const accounts = paged ? matching.slice(offset, offset + limitParam(ctx.query.limit, 50, 500)) : matching;
    // The numbers requests are admitted against (the book's: live holds, charges not yet written),
    // the same the account sees on GET /api/account; the store's alone lag behind them.
    const live = await Promise.all(accounts.map((account) => deps.funds.balance(account.id)));
    ctx.body = {
      accounts: accounts.map((account, index) => ({
        ...accountSummaryView({ ...account, ...live[index] }),
        last_request_at: lastRequests.get(account.id)?.toISOString() ?? null,
      })),
      total: matching.length,
    };
  });

  router.post('/admin/accounts', ...admin, async (ctx) => {
    const body = await readJsonObject(ctx);
    const name = accountName(body);
    const email = optionalEmail(body);
    const password = newPassword(body);
    const role = body.role ?? 'user';
    if (role !== 'user' && role !== 'admin') throw invalid('role', 'The role is "user" or "admin".');
    try {
      const account = await deps.store.createAccount({ name, email, role, passwordHash: await hashPassword(password) });
      deps.logger.info({ account: name, role, by: callerOf(ctx).account.name }, 'console: account created');
      await audit(deps, ctx, { action: 'account.create', target: account.id, accountId: account.id, before: null, after: { name, email, role } });
      ctx.status = 201;
      ctx.body = { account: accountView(account) };
    } catch (error) {
      if (error instanceof AccountExistsError) {
        throw new ApiError('conflict', error.field === 'email' ? 'This e-mail address is already in use.' : 'This name is taken.', error.field);
      }
      throw error;
    }
  });

  router.patch('/admin/accounts/:id', ...admin, async (ctx) => {
    const account = await accountParam(ctx);
    const body = await readJsonObject(ctx);
    const budget = optionalBudget(body, 'budget');
    const sessionBudget = optionalAmount(body, 'session_budget', 'The session budget');
    const disabled = Object.hasOwn(body, 'disabled') || (budget === undefined && sessionBudget === undefined) ? boolean(body, 'disabled', 'disabled') : undefined;
    if (disabled === true && account.id === callerOf(ctx).account.id) throw invalid('disabled', 'You cannot disable your own account.');
    if (budget !== undefined) {
      await deps.store.setAccountBudget(account.id, budget);
      deps.logger.info({ account: account.name, by: callerOf(ctx).account.name }, 'console: account budget changed');
      await audit(deps, ctx, accountBudgetChanged(account, budget));
    }
    if (sessionBudget !== undefined) {
      await deps.store.setAccountSessionBudget(account.id, sessionBudget);
      deps.logger.info({ account: account.name, by: callerOf(ctx).account.name }, 'console: account session budget changed');
      await audit(deps, ctx, accountSessionBudgetChanged(account, sessionBudget));
    }
    if (disabled !== undefined) {
      await deps.store.setAccountDisabled(account.id, disabled);
      // A disabled account's sessions and tokens end for good: enabling it again restores none of them.
      const ended = disabled ? await deps.store.endSessions(account.id) : 0;
      deps.logger.info({ account: account.name, disabled, by: callerOf(ctx).account.name }, 'console: account updated');
      await audit(deps, ctx, disabledChanged(account, disabled, ended));
    }
    ctx.body = { account: accountView((await deps.store.findAccountById(account.id)) ?? account) };
  });

  router.post('/admin/accounts/:id/credits', ...admin, async (ctx) => {
    const account = await accountParam(ctx);
    const body = await readJsonObject(ctx);
    const worth = amount(body, 'amount');
    const note = requiredString(body, 'note', 'A note (why this credit)', 500);
    const before = await deps.funds.balance(account.id);
    const credit = await deps.funds.credit({ accountId: account.id, amount: worth, kind: 'admin', actor: callerOf(ctx).account.name, note });
    deps.metrics.recordCredit(credit.kind, credit.amount);
    deps.logger.info({ account: account.name, credit: credit.id, by: callerOf(ctx).account.name }, 'console: account credited');
    const balance = await deps.funds.balance(account.id);
    await audit(deps, ctx, credited('account.credit', credit, before.balance, balance.balance));
    ctx.status = 201;
    ctx.body = { credit: creditView(credit), balance: formatUnits(balance.balance) };
  });

  // An adjustment down: takes back what was credited by mistake, with a note, as a ledger entry of
  // its own. At most what is available now (balance less what running requests hold), so the
  // account is never taken below zero by an administrator; a request that settles meanwhile may
  // still spend what it held.
  router.post('/admin/accounts/:id/debits', ...admin, async (ctx) => {
    const account = await accountParam(ctx);
    const body = await readJsonObject(ctx);
    const worth = amount(body, 'amount');
    const note = requiredString(body, 'note', 'A note (why this adjustment)', 500);
    const before = await deps.funds.balance(account.id);
    const available = before.balance - before.held;
    if (worth > available) {
      const heldText = before.held > 0n ? ` (${formatUnits(before.held)} is held by requests running)` : '';
      throw invalid('amount', `This account has ${formatUnits(available > 0n ? available : 0n)} available${heldText}: an adjustment takes at most that.`);
    }
    const actor = callerOf(ctx).account.name;
    const debit = await deps.funds.applyStored(
      account.id,
      () => deps.store.payments.debitAccount({ accountId: account.id, amount: worth, actor, note }),
      (taken) => -taken.amount,
    );
    deps.logger.info({ account: account.name, debit: debit.id, by: actor }, 'console: account adjusted down');
    const balance = await deps.funds.balance(account.id);
    await audit(deps, ctx, debited(debit, before.balance, balance.balance));
    ctx.status = 201;
    ctx.body = { debit: debitView(debit), balance: formatUnits(balance.balance) };
  });
}
