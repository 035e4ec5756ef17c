/**
 * Administrators: each provider's circuit breaker and its recent failure rate, as this instance sees
 * them (breakers are per instance), and whether it is configured at all (has the key or credential
 * source its protocol needs). Provider keys are never part of the answer.
 */
import type Router from '@koa/router';
import { providerHasCredentials } from '../../routing/resolve';
import type { ProviderHealth } from '../../upstream/breakers';
import { adminOnly, signedIn } from '../authenticate';
import type { AdminDeps, ApiState } from '../context';

export function adminProviderRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/admin/providers', signedIn(deps), adminOnly, (ctx) => {
    const { config, chain } = deps.runtime.current;
    const health = chain.service('upstream')?.providerHealth() ?? new Map<string, ProviderHealth>();
    ctx.body = {
      providers: Object.values(config.providers).map((provider) => {
        const seen = health.get(provider.id);
        const attempts = seen?.attempts ?? 0;
        const failures = seen?.failures ?? 0;
        return {
          name: provider.id,
          protocol: provider.protocol,
          configured: providerHasCredentials(provider),
          breaker: seen?.state ?? 'closed',
          window_seconds: Math.round((seen?.windowMs ?? 0) / 1000),
          requests: attempts,
          failures,
          error_rate: attempts === 0 ? 0 : Math.round((failures / attempts) * 1000) / 1000,
        };
      }),
    };
  });
}
