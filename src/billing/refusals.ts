/**
 * Why a paid request is not served, in the gateway's error shape: a hold refused (balance, key
 * limit, budgets, session budgets), billing unable to answer, or a ledger too far behind to take
 * more charges safely. The message says what the request could cost and what was left.
 */
import type { BillingPluginConfig } from '../config/types';
import { GatewayError } from '../kernel/errors';
import type { Outbox } from '../outbox/outbox';
import type { HoldResult } from '../store/store';
import { budgetName, resetTime, sessionBudgetName } from './budgets';
import type { HoldEstimate } from './hold-amount';
import { formatUnits } from './money';

/** What the client is told when the book refused the hold. */
export function refusal(result: Exclude<HoldResult, { ok: true }>, estimate: HoldEstimate): GatewayError {
  const output = estimate.images === undefined ? `${estimate.outputTokens} output tokens` : `${estimate.images} images${estimate.outputTokens > 0 ? ` of up to ${estimate.outputTokens} image tokens in all` : ''}`;
  const need = `this request can cost up to ${formatUnits(estimate.amount)} (up to ${estimate.inputTokens} input tokens and ${output}${toolsText(estimate)})`;
  if (result.reason === 'budget') {
    const reset = resetTime(result.budget);
    return new GatewayError(
      'TOLLGATE_ERR_BUDGET_EXCEEDED',
      `${budgetName(result.budget)} is reached: ${need} and the budget has ${formatUnits(result.available)} left until it resets at ${reset}.`,
      { headers: { 'x-tollgate-budget-reset': reset }, refusedBy: `budget:${result.budget.scope}:${result.budget.period}` },
    );
  }
  if (result.reason === 'session_budget') {
    const { budget, spent } = result;
    return new GatewayError(
      'TOLLGATE_ERR_SESSION_BUDGET_EXCEEDED',
      `${sessionBudgetName(budget)} is reached for session "${budget.sessionId}": the session has spent ${formatUnits(spent)}, ${need}, and the session has ${formatUnits(result.available)} left. Stop here; a new session starts with its own budget.`,
      { headers: { 'x-tollgate-session-spent': formatUnits(spent) }, refusedBy: `session_budget:${budget.scope}` },
    );
  }
  if (result.reason === 'key_spend_limit') {
    return new GatewayError(
      'TOLLGATE_ERR_KEY_SPEND_LIMIT',
      `This API key's spend limit is reached: ${need} and the key has ${formatUnits(result.available)} left of its limit.`,
      { refusedBy: 'key' },
    );
  }
  return new GatewayError(
    'TOLLGATE_ERR_INSUFFICIENT_BALANCE',
    `Insufficient balance: ${need} and the account has ${formatUnits(result.available)} available. Top up in the console at /console/topup, or ${estimate.images === undefined ? 'lower max_tokens' : 'ask for fewer images'}.`,
    { refusedBy: 'account' },
  );
}

function toolsText(estimate: HoldEstimate): string {
  return Object.entries(estimate.toolCalls)
    .map(([tool, calls]) => `, ${calls} ${tool} calls`)
    .join('');
}

/** The book did not answer (or this instance is closing): fail closed, with a retry hint. */
export function unavailable(cause: unknown): GatewayError {
  return new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable right now, so the request was not served; retry shortly.', {
    cause,
    headers: { 'retry-after': '1' },
  });
}

/**
 * The ledger is behind (store stalled or refusing writes): what is not written yet is what a crash
 * would lose, so no more paid requests until it catches up. Free models hold nothing and still pass.
 */
export function backlogged(config: BillingPluginConfig, unwritten: number, oldestAgeMs: number): GatewayError | null {
  if (unwritten < config.max_queued_charges && oldestAgeMs < config.max_queued_age_ms) return null;
  return new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable right now, so the request was not served; retry shortly.', {
    cause: new Error(`the ledger is behind: ${unwritten} charges not yet written, the oldest ${Math.round(oldestAgeMs)} ms old`),
    headers: { 'retry-after': String(Math.max(1, Math.ceil(config.max_queued_age_ms / 1000))) },
  });
}

/**
 * With the outbox, paid requests are served through a store outage: their charges wait on disk. What
 * stops them is the outbox's own bound, or a disk that refuses writes (nothing new would be durable).
 */
export function outboxRefusal(config: BillingPluginConfig, outbox: Outbox): GatewayError | null {
  const error = outbox.writeError;
  const full = outbox.undrainedBytes >= config.outbox_max_bytes;
  if (error === null && !full) return null;
  const cause = error !== null
    ? new Error(`the outbox ${outbox.dir} cannot be written: ${error.message}`, { cause: error })
    : new Error(`the outbox holds ${outbox.undrainedBytes} bytes of charges the store has not confirmed (billing.outbox_max_bytes ${config.outbox_max_bytes})`);
  return new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable right now, so the request was not served; retry shortly.', {
    cause,
    headers: { 'retry-after': '1' },
  });
}
