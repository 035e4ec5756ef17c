/**
 * What the audit log keeps of a changed thing, before and after: settings, amounts and ids, never a
 * secret (no key, token, code text, password or hash). One function per kind, shared by the
 * management API, the CLI and the server, so an entry reads the same whichever surface wrote it.
 */
import { formatUnits } from '../billing/money';
import type { AuditAction, AuditState, NewAuditEntry } from '../store/audit';
import type { PaymentDebit } from '../store/payments';
import type { TransferRecord } from '../store/transfers';
import type { Account, ApiKeyRecord, Budget, CreditRecord, OperatorLimits, SessionRecord } from '../store/store';

/** An entry minus who made it: what each surface's own `audit` helper completes. */
export type AuditChange = Pick<NewAuditEntry, 'action' | 'target' | 'accountId' | 'before' | 'after'>;

/** What a key's owner or an operator may change on it. */
function keyLimitsState(key: ApiKeyRecord): AuditState {
  return {
    spend_limit: key.spendLimit === null ? null : formatUnits(key.spendLimit),
    models: key.models,
    rate_limits: key.rateLimits,
    budget: budgetState(key.budget),
    // Named only when set, so entries of keys without them read as before.
    ...(key.sessionBudget === null ? {} : { session_budget: formatUnits(key.sessionBudget) }),
    ...(key.allowedNetworks === null ? {} : { allowed_networks: key.allowedNetworks }),
    ...(key.operatorLimits === null ? {} : { operator_limits: operatorLimitsState(key.operatorLimits) }),
  };
}

function operatorLimitsState(limits: OperatorLimits): AuditState {
  return {
    ...(limits.spendLimit === undefined ? {} : { spend_limit: formatUnits(limits.spendLimit) }),
    ...(limits.models === undefined ? {} : { models: limits.models }),
    ...(limits.rateLimits === undefined ? {} : { rate_limits: limits.rateLimits }),
    ...(limits.allowedNetworks === undefined ? {} : { allowed_networks: limits.allowedNetworks }),
    ...(limits.budget === undefined ? {} : { budget: budgetState(limits.budget) }),
    ...(limits.sessionBudget === undefined ? {} : { session_budget: formatUnits(limits.sessionBudget) }),
  };
}

function budgetState(budget: Budget | null): AuditState | null {
  return budget === null ? null : { amount: formatUnits(budget.amount), period: budget.period, timezone: budget.timezone };
}

export function accountBudgetChanged(before: Account, after: Budget | null): AuditChange {
  return { action: 'account.budget', target: before.id, accountId: before.id, before: { budget: budgetState(before.budget) }, after: { budget: budgetState(after) } };
}

export function accountSessionBudgetChanged(before: Account, after: bigint | null): AuditChange {
  const state = (amount: bigint | null) => ({ session_budget: amount === null ? null : formatUnits(amount) });
  return { action: 'account.budget', target: before.id, accountId: before.id, before: state(before.sessionBudget), after: state(after) };
}

/** A new key as issued: its shown prefix and last four characters, its name and limits. */
export function keyCreated(key: ApiKeyRecord): AuditChange {
  return {
    action: 'key.create',
    target: key.id,
    accountId: key.accountId,
    before: null,
    after: { name: key.name, prefix: key.prefix, last4: key.last4, expires_at: key.expiresAt?.toISOString() ?? null, ...keyLimitsState(key) },
  };
}

export function keyRevoked(key: ApiKeyRecord, revokedAt: Date | null): AuditChange {
  return {
    action: 'key.revoke',
    target: key.id,
    accountId: key.accountId,
    before: { revoked_at: key.revokedAt?.toISOString() ?? null },
    after: { revoked_at: revokedAt?.toISOString() ?? null },
  };
}

export function keyLimitsChanged(before: ApiKeyRecord, after: ApiKeyRecord): AuditChange {
  return { action: 'key.limits', target: before.id, accountId: before.accountId, before: keyLimitsState(before), after: keyLimitsState(after) };
}

/** A credit (an administrator's or a redeemed code's) with the balance before and after it. */
export function credited(action: Extract<AuditAction, 'account.credit' | 'code.redeem'>, credit: CreditRecord, balanceBefore: bigint, balanceAfter: bigint): AuditChange {
  return {
    action,
    target: credit.accountId,
    accountId: credit.accountId,
    before: { balance: formatUnits(balanceBefore) },
    after: { balance: formatUnits(balanceAfter), amount: formatUnits(credit.amount), credit_id: credit.id, note: credit.note },
  };
}

/** An administrator's adjustment that took funds back, with the balance before and after it. */
export function debited(debit: PaymentDebit, balanceBefore: bigint, balanceAfter: bigint): AuditChange {
  return {
    action: 'account.debit',
    target: debit.accountId,
    accountId: debit.accountId,
    before: { balance: formatUnits(balanceBefore) },
    after: { balance: formatUnits(balanceAfter), amount: formatUnits(debit.amount), debit_id: debit.id, note: debit.note },
  };
}

/** Credit moved between two accounts: filed under the source, its target the destination, so either finds it. */
export function transferred(transfer: TransferRecord): AuditChange {
  return {
    action: 'account.transfer',
    target: transfer.toAccountId,
    accountId: transfer.fromAccountId,
    before: null,
    after: { transfer_id: transfer.id, from_account_id: transfer.fromAccountId, to_account_id: transfer.toAccountId, amount: formatUnits(transfer.amount), note: transfer.note },
  };
}

export function tokenCreated(token: SessionRecord): AuditChange {
  return { action: 'token.create', target: token.id, accountId: token.accountId, before: null, after: { name: token.name } };
}

export function tokenRevoked(token: SessionRecord): AuditChange {
  return { action: 'token.revoke', target: token.id, accountId: token.accountId, before: { name: token.name }, after: null };
}

/** An account disabled or enabled, and how many sessions and tokens that ended. */
export function disabledChanged(account: Account, disabled: boolean, sessionsEnded: number): AuditChange {
  return {
    action: disabled ? 'account.disable' : 'account.enable',
    target: account.id,
    accountId: account.id,
    before: { disabled: account.disabled },
    after: { disabled, sessions_ended: sessionsEnded },
  };
}

/** Sessions and tokens ended on request (the Account page, an administrator): which, and how many. */
export function sessionsEnded(accountId: string, which: string, count: number): AuditChange {
  return { action: 'account.sessions_end', target: accountId, accountId, before: null, after: { which, sessions_ended: count } };
}

/** A password set or changed: that it happened, and how many other logins it ended; never the password. */
export function passwordChanged(accountId: string, sessionsEnded: number): AuditChange {
  return { action: 'account.password', target: accountId, accountId, before: null, after: { sessions_ended: sessionsEnded } };
}
