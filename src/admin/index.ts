/**
 * The management API under `/api`: the console's only way in, and what an operator scripts with a
 * management token. JSON in, JSON out, one error shape (api-error.ts), no caching, no framing.
 */
import Router from '@koa/router';
import type { Middleware, Next } from 'koa';
import { ApiError } from './api-error';
import { HashingBusyError } from '../auth/hash-queue';
import type { AdminDeps, ApiContext, ApiState } from './context';
import { accountRoutes } from './routes/account';
import { adminAccountRoutes } from './routes/admin-accounts';
import { adminAuditRoutes } from './routes/admin-audit';
import { adminMoneyRoutes } from './routes/admin-money';
import { adminKeyRoutes } from './routes/admin-keys';
import { adminCodeRoutes } from './routes/admin-codes';
import { adminProviderRoutes } from './routes/admin-providers';
import { insightRoutes } from './routes/insight';
import { keyRoutes } from './routes/keys';
import { paymentRoutes } from './routes/payments';
import { publicRoutes } from './routes/public';
import { sessionRoutes } from './routes/session';
import { budgetRoutes } from './routes/budgets';
import { tokenRoutes } from './routes/tokens';
import { twoFactorRoutes } from './routes/two-factor';
import { sessionListRoutes } from './routes/sessions';
import { statementRoutes } from './routes/statements';
import { topupRoutes } from './routes/topup';
import { usageRoutes } from './routes/usage';
import { orgRoutes } from './routes/orgs';
import { transferRoutes } from './routes/transfers';
import { invitationRoutes } from './routes/invitations';
import { orgKeyRoutes } from './routes/org-keys';
import { orgUsageRoutes } from './routes/org-usage';
import { adminOrgRoutes } from './routes/admin-orgs';

export const API_PREFIX = '/api';

/** Headers of every `/api` answer: nothing cached, nothing sniffed, nothing framed or run. */
function setApiSecurityHeaders(ctx: ApiContext): void {
  ctx.set({
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  });
  if (ctx.secure) ctx.set('strict-transport-security', 'max-age=31536000; includeSubDomains');
}

function renderErrors(deps: AdminDeps) {
  return async function apiErrors(ctx: ApiContext, next: Next): Promise<void> {
    try {
      await next();
    } catch (thrown) {
      const error =
        thrown instanceof ApiError
          ? thrown
          : thrown instanceof HashingBusyError
            ? new ApiError('unavailable', `Too many passwords are being checked right now; retry in ${thrown.retryAfterSeconds} s.`, undefined, {
                'retry-after': String(thrown.retryAfterSeconds),
              })
            : new ApiError('unavailable', `The request failed inside the gateway; its log has the details under request id ${ctx.state.requestId}.`);
      if (!(thrown instanceof ApiError) && !(thrown instanceof HashingBusyError)) deps.logger.error({ err: thrown, requestId: ctx.state.requestId }, `management API: ${ctx.method} ${ctx.path} failed`);
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.body = error.toJSON();
    }
  };
}

/** Every `/api` route. Routes read `deps` only when a request arrives, never while being registered. */
function buildRouter(deps: AdminDeps): Router<ApiState> {
  const router = new Router<ApiState>({ prefix: API_PREFIX });
  publicRoutes(router, deps);
  sessionRoutes(router, deps);
  accountRoutes(router, deps);
  keyRoutes(router, deps);
  topupRoutes(router, deps);
  usageRoutes(router, deps);
  insightRoutes(router, deps);
  tokenRoutes(router, deps);
  budgetRoutes(router, deps);
  twoFactorRoutes(router, deps);
  sessionListRoutes(router, deps);
  orgRoutes(router, deps);
  transferRoutes(router, deps);
  invitationRoutes(router, deps);
  orgKeyRoutes(router, deps);
  orgUsageRoutes(router, deps);
  adminAccountRoutes(router, deps);
  adminOrgRoutes(router, deps);
  adminKeyRoutes(router, deps);
  adminCodeRoutes(router, deps);
  adminProviderRoutes(router, deps);
  adminAuditRoutes(router, deps);
  adminMoneyRoutes(router, deps);
  paymentRoutes(router, deps);
  statementRoutes(router, deps);
  return router;
}

export interface ManagementRoute {
  /** `GET`, `POST`, … (the HEAD the router adds to each GET is left out). */
  readonly method: string;
  /** With the `/api` prefix and `:param` placeholders: `/api/keys/:id`. */
  readonly path: string;
}

/**
 * The routes the management API serves, read from the same router the middleware uses, so
 * schemas/management-api.yaml can be checked against it. Needs no gateway: the routes are only
 * registered, never run, so they are handed no services.
 */
export function managementRoutes(): ManagementRoute[] {
  return buildRouter({} as AdminDeps).stack.flatMap((layer) =>
    layer.methods.filter((method) => method !== 'HEAD').map((method) => ({ method, path: String(layer.path) })),
  );
}

export function managementApi(deps: AdminDeps): Middleware<ApiState> {
  const router = buildRouter(deps);
  const routes = router.routes();
  // Not thrown: the router sets `Allow` only when it answers itself, and a 405 must name what is allowed.
  const methods = router.allowedMethods({ throw: false });
  const errors = renderErrors(deps);

  return async function handleApi(ctx, next: () => Promise<void>): Promise<void> {
    if (ctx.path !== API_PREFIX && !ctx.path.startsWith(`${API_PREFIX}/`)) return next();
    setApiSecurityHeaders(ctx);
    await errors(ctx, async () => {
      if (!deps.runtime.current.config.console.enabled) throw new ApiError('not_found', 'The management API is turned off (console.enabled: false).');
      // The router's context type adds its own fields (params, router) to ours; it is the same object.
      const routed = ctx as Parameters<typeof routes>[0];
      await routes(routed, async () => {
        await methods(routed as Parameters<typeof methods>[0], async () => undefined);
        if (ctx.status === 405) throw new ApiError('method_not_allowed', 'This method is not supported on this path.');
        if (ctx.status === 501) throw new ApiError('method_not_allowed', 'This method is not supported.');
        if (ctx.body === undefined && ctx.status === 404) throw new ApiError('not_found', `No management route ${ctx.method} ${ctx.path}.`);
      });
    });
  };
}
