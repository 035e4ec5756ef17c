/**
 * The token GET /metrics asks for has two keys: `server.metrics_token`, the documented one, and
 * `plugins.metrics.bearer_token`, its older name, still read so existing files keep their token.
 * One mechanism: the older key fills the new one when that is unset, and two different values are
 * refused, since guessing which one the scraper has would leave the other open or locked.
 */
import type { ConfigIssue } from './config-error';
import type { YamlLocator } from './locate';
import type { GatewayData } from './schema-types';

/** `server.metrics_token`, or the older key's value when only that is set. */
export function metricsToken(data: Pick<GatewayData, 'server' | 'plugins'>): string {
  return data.server.metrics_token !== '' ? data.server.metrics_token : data.plugins.metrics.bearer_token;
}

export function metricsTokenIssues(data: Pick<GatewayData, 'server' | 'plugins'>, locator: YamlLocator): ConfigIssue[] {
  const { metrics_token: current } = data.server;
  const { bearer_token: older } = data.plugins.metrics;
  if (current === '' || older === '' || current === older) return [];
  return [locator.issue(['plugins', 'metrics', 'bearer_token'], 'differs from server.metrics_token; bearer_token is its older name: keep only server.metrics_token')];
}
