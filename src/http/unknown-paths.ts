/**
 * Answers for paths Tollgate does not serve (docs/decisions.md#d4-unknown-and-unshipped-paths-are-a-json-404
 * and docs/decisions.md#d5-a-wrong-base-url-says-how-to-fix-it). Each is a JSON error the SDKs can read,
 * never HTML or an empty body, and a wrong base URL says how to fix it.
 */
import { GatewayError } from '../kernel/errors';
import type { ErrorShape } from '../protocols/types';

export interface UnknownPathAnswer {
  readonly error: GatewayError;
  readonly shape: ErrorShape;
}

const SERVED = 'This gateway serves POST /v1/chat/completions, POST /v1/responses, POST /v1/messages and POST /v1/images/generations.';

/** Classifies a request that matched no endpoint. `origin` is the gateway's own scheme and host. */
export function unknownPath(method: string, path: string, origin: string): UnknownPathAnswer {
  if (/\/messages(?:\/count_tokens)?\/?$/.test(path)) {
    return {
      shape: 'anthropic',
      error: new GatewayError(
        'TOLLGATE_ERR_PATH_WRONG_BASE',
        `No endpoint at ${path}. Anthropic clients must use the bare host as base URL: ${origin} (no /v1 suffix, no trailing path).`,
      ),
    };
  }
  if (/\/(?:chat\/completions|responses|images\/generations)\/?$/.test(path)) {
    return {
      shape: 'openai',
      error: new GatewayError(
        'TOLLGATE_ERR_PATH_WRONG_BASE',
        `No endpoint at ${path}. OpenAI clients must use ${origin}/v1 as base URL.`,
      ),
    };
  }
  return {
    shape: 'openai',
    error: new GatewayError('TOLLGATE_ERR_PATH_UNKNOWN', `Unknown request URL: ${method} ${path}. ${SERVED}`),
  };
}
