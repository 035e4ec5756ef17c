/**
 * Sends one request upstream with failover: routes in the order the plan gives, each attempt through
 * its provider's circuit breaker, retrying what the policy calls retryable, with backoff, until an
 * answer is committed, the attempts run out, or the request's deadline passes. Retries happen only
 * before the commit point: once a byte has reached the client, a failure ends the stream with an
 * error event and is never retried (no duplicated text).
 */
import type { AffinityConfig, FailoverPolicy } from '../config/types';
import type { AttemptTrace, GatewayContext } from '../kernel/context';
import { need } from '../kernel/need';
import { withTraceHeaders } from '../telemetry/traced-client';
import { GatewayError } from '../kernel/errors';
import { affinityKey, routeId, sessionOf, withAffinity, type AffinityStore } from '../routing/affinity';
import { backoffMs, effectivePolicy, isRetryable, type Outcome } from '../routing/failover';
import { attemptOrder } from '../routing/plan';
import { providerHasCredentials, type Target } from '../routing/resolve';
import { AttemptFailure, type ReportEnd, type RouteTranslator } from './attempt';
import { AttemptAbort } from './attempt-abort';
import { BreakerOpenError, type ProviderBreakers } from './breakers';
import type { RetryBudget } from './retry-budget';
import { CLIENT_CLOSED_REQUEST, openExchange, type ExchangeRecorder } from './exchange';
import { ClientWatch } from './client-watch';
import { ABORTED_BY_DEADLINE } from './failures';
import { attemptRoute } from './attempt-route';
import type { UpstreamClient } from './types';

export interface DispatchDeps {
  readonly clients: ReadonlyMap<string, UpstreamClient>;
  readonly breakers: ProviderBreakers;
  readonly retryBudget: RetryBudget;
  readonly failover: FailoverPolicy;
  /** How the request crosses to a target: the passthrough or a translator (throws a 400 when neither serves). */
  readonly routeFor: (ctx: GatewayContext, target: Target) => RouteTranslator;
  /** Session affinity, when enabled: which session a request belongs to, and where sessions last went. */
  readonly affinity: { readonly config: AffinityConfig; readonly store: AffinityStore } | null;
}

/** Called with the route whose answer was committed. */
type OnCommitted = (target: Target) => void;

function outcomeOf(failure: AttemptFailure): Outcome {
  return failure.kind === 'status' ? { kind: 'status', status: failure.status ?? 502 } : { kind: failure.kind };
}

/** Resolves after `ms`, or at once when the client leaves. */
function sleep(ms: number, client: ClientWatch): Promise<void> {
  if (ms <= 0 || client.left) return Promise.resolve();
  const wake = new AttemptAbort();
  const unwatch = client.watch(wake);
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      wake.removeEventListener('abort', done);
      unwatch();
      resolve();
    }
    wake.addEventListener('abort', done);
  });
}

export async function dispatch(ctx: GatewayContext, deps: DispatchDeps): Promise<void> {
  const request = need(ctx, 'request');
  const policy = effectivePolicy(deps.failover, request.model);
  const routes = attemptOrder(request.model, ctx.state.config).filter((target) => providerHasCredentials(target.provider));
  const { order, onCommitted } = await sessionOrder(ctx, deps, routes);
  const recorder = openExchange(ctx, order[0]);
  const clientGone = new ClientWatch();
  const onClose = () => {
    if (!ctx.res.writableFinished) clientGone.leave();
  };
  ctx.res.once('close', onClose);
  try {
    await deps.retryBudget.around(() => attemptAll(ctx, deps, policy, order, recorder, clientGone, onCommitted));
  } finally {
    ctx.res.off('close', onClose);
  }
}

/**
 * The session's route first within its level, and how to remember where the session went. Only a
 * level with a choice needs it; a model with one route per level never looks the session up.
 */
async function sessionOrder(ctx: GatewayContext, deps: DispatchDeps, routes: Target[]): Promise<{ order: Target[]; onCommitted: OnCommitted }> {
  const none = { order: routes, onCommitted: () => undefined };
  const { affinity } = deps;
  if (affinity === null || !affinity.config.enabled || !hasChoice(routes)) return none;
  const session = sessionOf(affinity.config, (name) => ctx.get(name), ctx.state.auth?.key.id ?? null);
  if (session === null) return none;
  const key = affinityKey(need(ctx, 'request').model.id, session);
  const pinned = await affinity.store.get(key);
  return {
    order: withAffinity(routes, pinned),
    onCommitted(target) {
      const id = routeId(target);
      if (id !== pinned) void affinity.store.set(key, id);
    },
  };
}

/** Whether two routes share a priority level (otherwise the order is fixed and affinity moot). */
function hasChoice(routes: readonly Target[]): boolean {
  const levels = new Set(routes.map((target) => target.route.priority));
  return levels.size < routes.length;
}

async function attemptAll(
  ctx: GatewayContext,
  deps: DispatchDeps,
  policy: FailoverPolicy,
  order: Target[],
  recorder: ExchangeRecorder,
  clientGone: ClientWatch,
  onCommitted: OnCommitted,
): Promise<void> {
  const deadlineAt = Date.now() + policy.deadline_ms;
  let last: AttemptFailure | null = null;
  let lastTarget: Target | null = null;
  /** The shortest wait a provider's 429 asked for, for the 503 that answers when all were busy. */
  let overloadedFor: number | null = null;
  const openUntil: number[] = [];
  let attempts = 0;
  /** Whether the attempt under way holds a retry from the budget. */
  let retrying = false;

  // Each pass walks every route once; breakers that are open are skipped without using an attempt.
  for (let index = 0; attempts < policy.max_attempts && index < order.length * policy.max_attempts; index++) {
    const target = order[index % order.length];
    if (attempts > 0) {
      // Out of budget: the failure so far is the answer, rather than more load on a struggling provider.
      if (!deps.retryBudget.tryRetry()) break;
      retrying = true;
      const sameRoute = lastTarget === target;
      await sleep(Math.min(backoffMs(attempts + 1, policy, last?.retryAfterMs ?? null, sameRoute), deadlineAt - Date.now()), clientGone);
    }
    if (clientGone.left || Date.now() >= deadlineAt) {
      if (retrying) deps.retryBudget.release();
      if (clientGone.left) return clientLeft(ctx, recorder);
      break;
    }

    const client = deps.clients.get(target.provider.id)!;
    const attempt = new AttemptAbort();
    const unwatch = clientGone.watch(attempt);
    // One deadline covers every attempt until the answer is committed, never the stream after it.
    const deadline = setTimeout(() => attempt.abort(ABORTED_BY_DEADLINE), Math.max(0, deadlineAt - Date.now()));
    const startedAt = performance.now();
    const log = (outcome: string) => recorder.logAttempt({ provider: target.provider.id, outcome, durationMs: performance.now() - startedAt });
    // Made once the breaker lets the attempt through: a skipped route is no attempt, and has no span.
    const traced: { span: AttemptTrace | null } = { span: null };
    try {
      const route = deps.routeFor(ctx, target);
      const commit = await deps.breakers.run(target.provider.id, () => {
        recorder.attempt(target);
        traced.span = ctx.state.trace?.startAttempt(target, attempts + 1) ?? null;
        const sender = traced.span === null ? client : withTraceHeaders(client, traced.span.headers);
        return attemptRoute(ctx, target, sender, route, attempt.signal);
      });
      log('ok');
      traced.span?.committed();
      onCommitted(target);
      recorder.committed(commit.upstreamRequestId);
      commit.commit(ctx, reportTo(recorder.report, deps.breakers, target, traced.span));
      return;
    } catch (error) {
      if (error instanceof BreakerOpenError) {
        recorder.logAttempt({ provider: target.provider.id, outcome: 'breaker_open', durationMs: 0 });
        openUntil.push(error.halfOpenAt);
        continue;
      }
      if (error instanceof AttemptFailure) {
        const outcome = error.kind === 'status' ? `status_${error.status}` : error.kind;
        log(outcome);
        traced.span?.failed(outcome, error.status);
      } else {
        traced.span?.failed('error', null);
      }
      if (!(error instanceof AttemptFailure)) {
        // A request that cannot be sent (a 400 from translation): not the provider's fault, not retried.
        recorder.fail(error, error instanceof GatewayError ? error.status : 500);
        throw error;
      }
      attempts += 1;
      if (error.kind === 'aborted') return clientLeft(ctx, recorder);
      if (error.kind === 'status' && error.status === 429) overloadedFor = Math.min(overloadedFor ?? Infinity, error.retryAfterMs ?? 1000);
      last = error;
      lastTarget = target;
      if (!isRetryable(outcomeOf(error), policy)) break;
    } finally {
      clearTimeout(deadline);
      unwatch();
      if (retrying) deps.retryBudget.release();
      retrying = false;
    }
  }
  answerWithoutCommit(ctx, recorder, last, openUntil, overloadedFor);
}

/** Counts a stream that broke after its commit against its provider, ends the attempt's span, then reports as usual. */
function reportTo(report: ReportEnd, breakers: ProviderBreakers, target: Target, span: AttemptTrace | null): ReportEnd {
  return (end, usage, status, outputTokens, replyId) => {
    if (end.kind === 'failed') breakers.recordFailure(target.provider.id, end.error);
    span?.ended(end, usage, status);
    report(end, usage, status, outputTokens, replyId);
  };
}

function clientLeft(ctx: GatewayContext, recorder: ExchangeRecorder): void {
  ctx.status = CLIENT_CLOSED_REQUEST;
  recorder.abort();
}

/** No answer was committed: the last failure's answer, or why nothing could be tried. */
function answerWithoutCommit(ctx: GatewayContext, recorder: ExchangeRecorder, last: AttemptFailure | null, openUntil: number[], overloadedFor: number | null): void {
  if (last !== null && last.kind === 'status' && last.status === 429) {
    // The provider's 429 is its capacity, not the client's limit: relayed as is, the client would take
    // it for its own rate limit (docs/faults.md#c3). Said as 503 with the provider's shortest wait.
    const seconds = Math.max(1, Math.ceil((overloadedFor ?? 1000) / 1000));
    const error = new GatewayError('TOLLGATE_ERR_UPSTREAM_OVERLOADED', `The providers of the model '${need(ctx, 'request').model.id}' are overloaded; retry in ${seconds} s.`, {
      headers: { 'retry-after': String(seconds) },
      cause: last,
    });
    recorder.fail(error, error.status);
    throw error;
  }
  if (last !== null) {
    recorder.fail(last, last.clientStatus);
    return last.respond(ctx);
  }
  const model = need(ctx, 'request').model.id;
  let error: GatewayError;
  if (openUntil.length > 0) {
    const seconds = Math.max(1, Math.ceil((Math.min(...openUntil) - Date.now()) / 1000));
    error = new GatewayError('TOLLGATE_ERR_NO_HEALTHY_UPSTREAM', `Every provider of the model '${model}' is failing right now; retry in ${seconds} s.`, {
      headers: { 'retry-after': String(seconds) },
    });
  } else {
    error = new GatewayError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', `The model '${model}' did not answer before the request's deadline.`);
  }
  recorder.fail(error, error.status);
  throw error;
}
