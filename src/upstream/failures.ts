/**
 * Turns what can go wrong on the way to a provider into attempt failures the failover policy can judge
 * and client-safe errors. Messages never carry the provider's URL, host or key: transport errors have
 * been known to leak them (docs/faults.md#a4).
 */
import { GatewayError } from '../kernel/errors';
import { AttemptFailure } from './attempt';
import type { AttemptSignal } from './attempt-abort';

/** Why an attempt's controller was aborted; `signal.reason` carries one of these. */
export const ABORTED_BY_CLIENT = 'client-closed';
export const ABORTED_BY_DEADLINE = 'deadline';

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(err: unknown): string {
  if (err === null || typeof err !== 'object') return '';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errorCode((err as { cause?: unknown }).cause);
}

function timedOut(provider: string, cause: unknown): AttemptFailure {
  return new AttemptFailure('timeout', null, new GatewayError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', `The upstream provider '${provider}' did not answer in time.`, { cause }));
}

/** The AttemptFailure for anything an attempt threw; `signal` is the attempt's own. */
export function attemptFailure(err: unknown, provider: string, signal: AttemptSignal): AttemptFailure {
  if (err instanceof AttemptFailure) return err;
  if (signal.aborted) {
    if (signal.reason === ABORTED_BY_DEADLINE) return timedOut(provider, err);
    return new AttemptFailure('aborted', null, new GatewayError('TOLLGATE_ERR_INTERNAL', 'The client closed the request.', { cause: err }));
  }
  if (err instanceof GatewayError) return new AttemptFailure('invalid', null, err);
  const code = errorCode(err);
  if (TIMEOUT_CODES.has(code)) return timedOut(provider, err);
  const unreachable = new GatewayError('TOLLGATE_ERR_UPSTREAM_UNREACHABLE', `The upstream provider '${provider}' could not be reached.`, { cause: err });
  return new AttemptFailure(CONNECT_CODES.has(code) ? 'connect_error' : 'reset', null, unreachable);
}
