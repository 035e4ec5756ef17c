/**
 * Moving credit between accounts one person may move money for: their own, and each organisation
 * where their role has the `move_money` power (owner, billing: org-access.ts). Either side may be
 * either: personal to organisation, back, or between two such organisations. The transfer goes
 * through the live book (funds.ts), which judges it with every hold on the source; an account the
 * caller may not move for answers 404, as one that does not exist.
 */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { transferShapeError } from '../../money/transfer';
import type { TransferRecord } from '../../store/transfers';
import { ApiError, invalid, notFound } from '../api-error';
import { audit } from '../audit';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { amount, optionalString, requiredString } from '../fields';
import { readJsonObject } from '../json-body';
import { may } from '../org-access';
import { transferView } from '../transfer-views';
import { transferred } from '../../audit/states';
import { single } from './query';

const LIST_LIMIT = 100;

export function transferRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  /** Whether the caller may move money into or out of `accountId`. */
  async function mayMoveFor(ctx: ApiContext, accountId: string): Promise<boolean> {
    const caller = callerOf(ctx).account;
    if (accountId === caller.id) return true;
    const membership = await deps.store.orgs.findMember(accountId, caller.id);
    return membership !== null && may(membership.role, 'move_money');
  }

  async function namesOf(transfers: readonly TransferRecord[]): Promise<Map<string, string | null>> {
    const ids = new Set(transfers.flatMap((transfer) => [transfer.fromAccountId, transfer.toAccountId]));
    const names = new Map<string, string | null>();
    for (const id of ids) names.set(id, (await deps.store.findAccountById(id))?.name ?? null);
    return names;
  }

  router.post('/transfers', signedIn(deps), async (ctx) => {
    const body = await readJsonObject(ctx);
    const from = requiredString(body, 'from_account_id', 'The account to move credit from');
    const to = requiredString(body, 'to_account_id', 'The account to move credit to');
    const worth = amount(body, 'amount');
    const note = optionalString(body, 'note', 'The note', 200);
    const shape = transferShapeError(from, to, worth);
    if (shape !== null) throw invalid('to_account_id', 'Choose two different accounts.');
    if (!(await mayMoveFor(ctx, from))) throw notFound('The account to move credit from');
    if (!(await mayMoveFor(ctx, to))) throw notFound('The account to move credit to');
    const actor = callerOf(ctx).account.name;
    const result = await deps.funds.transfer({ fromAccountId: from, toAccountId: to, amount: worth, actor, note });
    if (!result.ok) {
      const held = (await deps.funds.balance(from)).held;
      const heldText = held > 0n ? ` (${formatUnits(held)} is held by requests running)` : '';
      throw new ApiError('conflict', `That account has ${formatUnits(result.available)} available${heldText}: a transfer moves at most that.`, 'amount');
    }
    deps.logger.info({ transfer: result.transfer.id, from, to, by: actor }, 'console: credit transferred');
    await audit(deps, ctx, transferred(result.transfer));
    ctx.status = 201;
    ctx.body = { transfer: transferView(result.transfer, await namesOf([result.transfer])) };
  });

  router.get('/transfers', signedIn(deps), async (ctx) => {
    const accountId = single(ctx.query.account_id, 'account_id') ?? callerOf(ctx).account.id;
    if (!(await mayMoveFor(ctx, accountId))) throw notFound('This account');
    const transfers = await deps.store.transfers.listTransfers(accountId, LIST_LIMIT);
    const names = await namesOf(transfers);
    ctx.body = { transfers: transfers.map((transfer) => transferView(transfer, names)) };
  });
}
