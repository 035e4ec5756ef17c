/** Says once, at start, which limits gateway.yaml left to the catalog, so an operator sees the figures billing holds. */
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types';

export function logCatalogLimits(config: Pick<GatewayConfig, 'catalog_limits'>, logger: Logger): void {
  const limits = config.catalog_limits ?? [];
  if (limits.length === 0) return;
  logger.info(
    { limits: limits.map((limit) => ({ model: limit.model, [limit.field]: limit.value, from: limit.source })) },
    `models: ${limits.length} limit(s) the config file leaves out taken from the model catalog`,
  );
}
