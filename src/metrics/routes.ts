/**
 * The operator's routes: `GET /metrics` (Prometheus text format, behind an optional bearer token),
 * `GET /healthz` (the process answers) and `GET /readyz` (this instance should get traffic). They sit
 * beside the API endpoints, outside the plugin chain: no API key, no billing, no rate limit; the
 * kernel's request boundary still gives each answer its `x-request-id`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import type { RuntimeRef } from '../kernel/runtime';
import { GatewayError } from '../kernel/errors';
import type { GatewayMetrics } from './metrics';
import { checkReadiness, type ReadinessDeps } from './readiness';

export const OPS_PATHS = ['/metrics', '/healthz', '/readyz'] as const;

export interface OpsDeps {
  readonly metrics: GatewayMetrics;
  readonly runtime: RuntimeRef;
  readonly readiness: ReadinessDeps;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares in constant time (over digests, so lengths leak nothing either). */
function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The router of the three routes; anything but GET or HEAD on them is a 405. */
export function opsRouter<S>(deps: OpsDeps): Router<S> {
  const router = new Router<S>();

  router.get('/metrics', async function scrapeMetrics(ctx: ParameterizedContext<S>, next: () => Promise<void>) {
    const { config } = deps.runtime.current;
    // With the plugin off nothing is counted: the path is as unknown as any other.
    if (!config.plugins.metrics.enabled) return next();
    // Also filled from plugins.metrics.bearer_token, its older name (config/metrics-token.ts).
    const token = config.server.metrics_token;
    if (token !== '' && !tokenMatches(BEARER.exec(ctx.get('authorization'))?.[1] ?? '', token)) {
      throw new GatewayError('TOLLGATE_ERR_METRICS_UNAUTHORIZED', 'GET /metrics needs "Authorization: Bearer <token>" with the token set in server.metrics_token.', {
        headers: { 'www-authenticate': 'Bearer realm="tollgate-metrics"' },
      });
    }
    const { body, contentType } = await deps.metrics.scrape();
    ctx.set('cache-control', 'no-store');
    ctx.type = contentType;
    ctx.body = body;
  });

  router.get('/healthz', function healthz(ctx: ParameterizedContext<S>) {
    ctx.set('cache-control', 'no-store');
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async function readyz(ctx: ParameterizedContext<S>) {
    const readiness = await checkReadiness(deps.readiness);
    const failed = Object.entries(readiness.checks)
      .filter(([, result]) => result === 'failed' || result === 'stopping')
      .map(([name]) => name);
    ctx.set('cache-control', 'no-store');
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = readiness.ready ? { status: 'ready', checks: readiness.checks } : { status: 'unready', checks: readiness.checks, failed };
  });

  for (const path of OPS_PATHS) {
    router.all(path, function opsMethodNotAllowed(ctx: ParameterizedContext<S>, next: () => Promise<void>) {
      // A GET that got here was passed on (/metrics with the plugin off): an unknown path, not a 405.
      if (ctx.method === 'GET' || ctx.method === 'HEAD') return next();
      ctx.set('allow', 'GET, HEAD');
      throw new GatewayError('TOLLGATE_ERR_METHOD_NOT_ALLOWED', `${ctx.method} is not supported on ${path}; use GET.`);
    });
  }
  return router;
}
