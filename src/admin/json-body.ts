/** Reading a management request's JSON body: small, an object, and sent as JSON. */
import type { Context } from 'koa';
import { isObject } from '../json';
import { readRawBody } from '../kernel/body';
import { GatewayError } from '../kernel/errors';
import { ApiError } from './api-error';

/** Console forms are tiny; the largest body is an admin's batch of code settings. */
const MAX_BODY_BYTES = 64 * 1024;

export type JsonObject = Readonly<Record<string, unknown>>;

/**
 * The body as a JSON object. Requiring `application/json` also keeps plain HTML forms from other
 * sites out: a cross-site form can only send form encodings or text/plain.
 */
export async function readJsonObject(ctx: Context): Promise<JsonObject> {
  if (!ctx.is('application/json')) {
    throw new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
  }
  let raw: Buffer;
  try {
    raw = await readRawBody(ctx.req, MAX_BODY_BYTES);
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'TOLLGATE_ERR_BODY_TOO_LARGE') {
      ctx.set('connection', 'close');
      throw new ApiError('payload_too_large', `The body exceeds ${MAX_BODY_BYTES} bytes.`);
    }
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ApiError('invalid_request', 'The body is not valid JSON.');
  }
  if (!isObject(parsed)) {
    throw new ApiError('invalid_request', 'The body must be a JSON object.');
  }
  return parsed;
}
