/**
 * Turns what can go wrong on the way to a provider into client-safe errors. Messages never carry the
 * provider's URL, host or key: transport errors have been known to leak them (RELIABILITY.md A4).
 */
import { GatewayError } from '../kernel/errors';

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function errorCode(err: unknown): string {
  if (err === null || typeof err !== 'object') return '';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errorCode((err as { cause?: unknown }).cause);
}

/** The GatewayError a client sees for a failed attempt, the original kept as `cause` for the log. */
export function upstreamFailure(err: unknown, provider: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = errorCode(err);
  if (TIMEOUT_CODES.has(code)) {
    return new GatewayError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', `The upstream provider '${provider}' did not answer in time.`, {
      cause: err,
    });
  }
  return new GatewayError('TOLLGATE_ERR_UPSTREAM_UNREACHABLE', `The upstream provider '${provider}' could not be reached.`, {
    cause: err,
  });
}

/** Whether `err` is the abort of our own per-attempt controller (the client left), not a provider failure. */
export function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || errorCode(err) === 'UND_ERR_ABORTED');
}
