/** What every management route is handed: the services it works with and who is calling. */
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { RuntimeRef } from '../kernel/runtime';
import type { GatewayMetrics } from '../metrics/metrics';
import type { Account, SessionRecord, Store } from '../store/store';
import type { AutoRecharge } from '../payments/auto-recharge';
import type { Payments } from '../payments/payments';
import type { Funds } from './funds';
import type { LoginLimiter } from './login-limiter';

export interface Caller {
  readonly account: Account;
  readonly session: SessionRecord;
  /** `cookie`: a console login (state changes need the CSRF token); `token`: a management token. */
  readonly via: 'cookie' | 'token';
  /** The session's secret, from which its CSRF token is derived. */
  readonly secret: string;
}

export interface ApiState {
  requestId: string;
  caller?: Caller;
}

export type ApiContext = Koa.ParameterizedContext<ApiState>;

export interface AdminDeps {
  readonly store: Store;
  readonly runtime: RuntimeRef;
  readonly logger: Logger;
  readonly funds: Funds;
  /** Card payments (src/payments); its calls need `payments.stripe` configured. */
  readonly payments: Payments;
  /** Told when an account's auto-recharge settings change here, so it watches them at once. */
  readonly autoRecharge: AutoRecharge;
  readonly loginLimiter: LoginLimiter;
  /** Login outcomes and credits are counted here (tollgate_console_logins_total, tollgate_credited_units_total). */
  readonly metrics: GatewayMetrics;
  /** `GET /api/meta`'s version. */
  readonly version: string;
}

/** The caller of a route behind `signedIn`; a programming error if the route forgot it. */
export function callerOf(ctx: ApiContext): Caller {
  const caller = ctx.state.caller;
  if (caller === undefined) throw new Error(`route ${ctx.path} reads the caller without requiring a sign-in`);
  return caller;
}
