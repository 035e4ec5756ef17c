/**
 * What the schema cannot say about budgets and alerts: a time zone must be one this Node knows, and
 * a webhook needs the secret its deliveries are signed with.
 */
import { isTimezone } from '../billing/budget-period';
import type { ConfigIssue } from './config-error';
import type { YamlLocator } from './locate';
import type { GatewayConfig } from './types';

export function budgetConfigIssues(config: Pick<GatewayConfig, 'budgets' | 'alerts'>, locator: YamlLocator): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [role, budget] of Object.entries(config.budgets.role_defaults)) {
    if (budget !== undefined && !isTimezone(budget.timezone)) {
      issues.push(locator.issue(['budgets', 'role_defaults', role, 'timezone'], `"${budget.timezone}" is not an IANA time zone (such as UTC or Europe/Berlin)`));
    }
  }
  const { webhook } = config.alerts;
  if (webhook.url !== '' && webhook.secret === '') {
    issues.push(locator.issue(['alerts', 'webhook', 'secret'], 'a webhook needs a secret: receivers check each delivery\'s signature with it'));
  }
  return issues;
}
