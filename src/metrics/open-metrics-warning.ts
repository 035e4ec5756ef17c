/**
 * GET /metrics is open when server.metrics_token is empty, which is what Prometheus expects on a
 * private listener. On a listener other hosts can reach, the counters name models, accounts' traffic
 * and the gateway's version to anyone: said once at start, with the fix, rather than refused, because
 * a listener behind a private network or a proxy that guards the path is a legitimate setup.
 */
import { isIP } from 'node:net';

interface MetricsExposure {
  /** The address the listener is bound to, as `server.listen` reported it. */
  readonly address: string;
  readonly metricsEnabled: boolean;
  readonly metricsToken: string;
}

/** The warning to log at start, or null when /metrics is guarded, off, or on loopback only. */
export function openMetricsWarning({ address, metricsEnabled, metricsToken }: MetricsExposure): string | null {
  if (!metricsEnabled || metricsToken !== '' || isLoopback(address)) return null;
  return (
    `GET /metrics is open to anyone who can reach ${address}: set server.metrics_token ` +
    '(the shipped files read METRICS_TOKEN) or bind server.host to 127.0.0.1'
  );
}

function isLoopback(address: string): boolean {
  if (address === '::1' || address === 'localhost') return true;
  if (isIP(address) === 4) return address.startsWith('127.');
  // An IPv4 address bound through a dual-stack socket.
  return address.startsWith('::ffff:127.');
}
