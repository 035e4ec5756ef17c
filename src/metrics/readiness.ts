/**
 * Readiness (`GET /readyz`): whether this instance should get traffic. It is not ready once shutdown
 * has begun (answered at once, nothing pinged: docs/faults.md#h1), nor while the store, or a back
 * end a plugin cannot serve without (billing's balance book, in Redis or the store), does not answer.
 * A rate limiter on its local fallback is degraded, not unready: it still serves (docs/faults.md#h4).
 * So is an unreachable store while billing's outbox takes the charges (docs/ledger-faults.md).
 */
import type { Runtime } from '../kernel/runtime';
import type { Store } from '../store/store';
import { rateLimitDegraded } from './live';

type CheckResult = 'ok' | 'failed' | 'degraded' | 'stopping';

export interface Readiness {
  readonly ready: boolean;
  /** Each check by name: `shutdown`, `config`, `store`, and each plugin that has a back end to ask. */
  readonly checks: Readonly<Record<string, CheckResult>>;
}

export interface ReadinessDeps {
  readonly store: Store;
  /** The runtime serving now; null until a config is loaded. */
  readonly runtime: () => Runtime | null;
  /** True from the first moment of `stop()`. */
  readonly stopping: () => boolean;
}

/** A ping that rejects counts as a failure, like one that answers false. */
async function asked(ping: () => Promise<boolean>): Promise<CheckResult> {
  try {
    return (await ping()) ? 'ok' : 'failed';
  } catch {
    return 'failed';
  }
}

export async function checkReadiness(deps: ReadinessDeps): Promise<Readiness> {
  if (deps.stopping()) return { ready: false, checks: { shutdown: 'stopping' } };
  const runtime = deps.runtime();
  if (runtime === null) return { ready: false, checks: { config: 'failed' } };

  const checks: Record<string, CheckResult> = { config: 'ok' };
  const pending: Promise<void>[] = [asked(() => deps.store.ping()).then((result) => void (checks.store = result))];
  for (const name of runtime.chain.plugins) {
    const instance = runtime.chain.instance(name);
    if (instance?.ready !== undefined) {
      const ready = instance.ready.bind(instance);
      pending.push(asked(ready).then((result) => void (checks[name] = result)));
    }
  }
  await Promise.all(pending);
  if (rateLimitDegraded(runtime.chain)) checks['rate-limit'] = 'degraded';
  // Charges wait in the outbox and keys seen before still pass: pulled from a load balancer, the
  // instance would turn the outage it was built to ride out into one for every client.
  if (checks.store === 'failed' && runtime.chain.plugins.some((name) => runtime.chain.instance(name)?.coversStoreOutage?.() === true)) {
    checks.store = 'degraded';
  }
  // Answered after a slow ping: shutdown may have begun meanwhile.
  if (deps.stopping()) return { ready: false, checks: { ...checks, shutdown: 'stopping' } };
  return { ready: Object.values(checks).every((result) => result === 'ok' || result === 'degraded'), checks };
}
