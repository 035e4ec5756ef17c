/**
 * Administrators: redemption codes. A batch's code texts are returned once, as JSON or as a CSV
 * download; afterwards only their SHA-256 exists, so the list shows ids, amounts and status.
 */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { generateRedemptionCode, hashRedemptionCode } from '../../billing/redemption';
import { adminOnly, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { attachment, toCsv } from '../csv';
import { amount, integerInRange, optionalFutureDate } from '../fields';
import { readJsonObject } from '../json-body';
import { CODE_FIELDS, codeView } from '../views';
import { limitParam, single } from './query';
import { audit } from '../audit';

const MAX_BATCH = 1000;
const NEW_CODE_FIELDS = ['id', 'code', 'amount', 'expires_at'] as const;

export function adminCodeRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const admin = [signedIn(deps), adminOnly] as const;

  router.get('/admin/redemption-codes', ...admin, async (ctx) => {
    const csv = single(ctx.query.format, 'format') === 'csv';
    const codes = (await deps.store.listRedemptionCodes(limitParam(ctx.query.limit, csv ? 100_000 : 200, 100_000))).map((code) => codeView(code));
    if (!csv) {
      // Names beside ids: who redeemed each code, as the account is called now.
      const names = new Map((await deps.store.listAccounts()).map((account) => [account.id, account.name]));
      ctx.body = { codes: codes.map((code) => ({ ...code, redeemed_by_name: code.redeemed_by === null ? null : (names.get(code.redeemed_by) ?? null) })) };
      return;
    }
    attachment(ctx, `tollgate-codes-${new Date().toISOString().slice(0, 10)}.csv`);
    ctx.body = toCsv(CODE_FIELDS, codes);
  });

  router.post('/admin/redemption-codes', ...admin, async (ctx) => {
    const body = await readJsonObject(ctx);
    const count = integerInRange(body, 'count', 'The number of codes', 1, MAX_BATCH);
    const worth = amount(body, 'amount');
    const expiresAt = optionalFutureDate(body, 'expires_at', 'The expiry');
    const texts = Array.from({ length: count }, generateRedemptionCode);
    const records = await deps.store.createRedemptionCodes({
      hashes: texts.map(hashRedemptionCode),
      amount: worth,
      createdBy: callerOf(ctx).account.name,
      expiresAt,
    });
    deps.logger.info({ count, amount: formatUnits(worth), by: callerOf(ctx).account.name }, 'console: redemption codes generated');
    await audit(deps, ctx, {
      action: 'code.create',
      target: null,
      accountId: null,
      before: null,
      after: { count, amount: formatUnits(worth), expires_at: expiresAt?.toISOString() ?? null, first_id: records[0]?.id ?? null, last_id: records.at(-1)?.id ?? null },
    });
    const codes = records.map((record, index) => ({
      id: record.id,
      code: texts[index],
      amount: formatUnits(record.amount),
      expires_at: record.expiresAt?.toISOString() ?? null,
    }));
    ctx.status = 201;
    if (single(ctx.query.format, 'format') === 'csv') {
      attachment(ctx, `tollgate-new-codes-${new Date().toISOString().slice(0, 10)}.csv`);
      ctx.body = toCsv(NEW_CODE_FIELDS, codes);
      return;
    }
    ctx.body = { codes };
  });
}
