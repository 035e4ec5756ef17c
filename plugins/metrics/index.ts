/**
 * Counts every request on the API endpoints into the gateway's metrics (`src/metrics`). It runs
 * outermost, so it sees the requests auth refuses (401) and the rate limiter refuses (429) as well as
 * the answered ones. Counting waits for the exchange to finish and the charge to settle, but never on
 * the request's path: a stream's response goes out while its metrics wait for its last byte.
 */
import type { GatewayContext, Next } from '../../src/kernel/context';
import { toGatewayError, type GatewayError } from '../../src/kernel/errors';
import type { PluginDefinition } from '../kit';
import { summarize } from '../../src/metrics/summary';

export const metricsPlugin: PluginDefinition<'metrics'> = {
  name: 'metrics',
  // Outermost, so it sees every outcome: 401s and 429s included.
  priority: 10000,
  setup(config, { metrics, logger }) {
    const options = { labelAccounts: config.label_accounts };

    return {
      service: undefined,
      handle: async function metricsPlugin(ctx: GatewayContext, next: Next) {
        const startedAt = performance.now();
        const inFlight = metrics.inFlightCell(ctx.state.endpoint.id);
        inFlight.inc();
        let error: GatewayError | null = null;
        try {
          await next();
        } catch (thrown) {
          error = toGatewayError(thrown);
          throw thrown;
        } finally {
          const observed = { startedAt, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
          void summarize(ctx.state, observed, () => inFlight.dec()).then(
            (summary) => metrics.record(summary, options),
            (err: unknown) => logger.error({ err, requestId: ctx.state.requestId }, 'metrics: counting a request failed'),
          );
        }
      },
    };
  },
};
