/** Top Up: redeeming a code an administrator generated. The amount is the code's, never the client's. */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { REDEMPTION_CODE_PREFIX } from '../../billing/redemption';
import { ApiError, invalid } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { readJsonObject } from '../json-body';
import { creditView } from '../views';
import { audit } from '../audit';
import { credited } from '../../audit/states';
import { tooManyAttempts } from '../password-check';

const CODE_PATTERN = new RegExp(`^${REDEMPTION_CODE_PREFIX}[A-Z2-7]{24}$`);

const REFUSALS = {
  unknown: () => new ApiError('not_found', 'No such code. Check it for typos.', 'code'),
  used: () => new ApiError('conflict', 'This code has already been redeemed.', 'code'),
  expired: () => new ApiError('gone', 'This code has expired.', 'code'),
} as const;

export function topupRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.post('/topup/redeem', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const code = typeof body.code === 'string' ? body.code.trim() : '';
    if (!CODE_PATTERN.test(code)) throw invalid('code', `A redemption code looks like ${REDEMPTION_CODE_PREFIX}ABCD… (24 letters and digits after "${REDEMPTION_CODE_PREFIX}").`);
    // Failed redemptions are limited per account and per address like wrong passwords: the codes
    // carry 120 bits, and this keeps guessing at them slow and logged besides.
    const subjects = [`redeem:${account.id}`, `redeem:${ctx.ip}`];
    const wait = deps.loginLimiter.retryAfter(subjects, Date.now());
    if (wait > 0) throw tooManyAttempts('codes that did not work', wait);
    const before = await deps.funds.balance(account.id);
    const result = await deps.funds.redeem(code, account.id, account.name);
    if (!result.ok) {
      deps.loginLimiter.fail(subjects, Date.now());
      deps.logger.info({ account: account.name, address: ctx.ip, reason: result.reason }, 'console: a code was not redeemed');
      throw REFUSALS[result.reason]();
    }
    deps.metrics.recordCredit(result.credit.kind, result.credit.amount);
    deps.logger.info({ account: account.name, credit: result.credit.id }, 'console: code redeemed');
    const balance = await deps.funds.balance(account.id);
    await audit(deps, ctx, credited('code.redeem', result.credit, before.balance, balance.balance));
    ctx.body = { credit: creditView(result.credit), balance: formatUnits(balance.balance) };
  });
}
