/**
 * Readers for the loosely validated client request (Chat Completions or Responses): each check fails
 * as a 400 that names the field, so a client learns which part of its request Tollgate could not
 * carry to a Messages upstream.
 */
import { isObject, type Json } from '../../json';
import { GatewayError } from '../../kernel/errors';

/** Whether the client set a field: OpenAI clients send `null` to mean "not set". */
export function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** The 400 for `param`; `problem` completes a sentence that starts with the field's path. */
export function invalid(param: string, problem: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `${param} ${problem}`, { param });
}

export function requireRecord(value: unknown, param: string): Json {
  if (!isObject(value)) throw invalid(param, 'must be an object.');
  return value;
}

export function requireArray(value: unknown, param: string): readonly unknown[] {
  if (!Array.isArray(value)) throw invalid(param, 'must be an array.');
  return value;
}

export function requireString(value: unknown, param: string): string {
  if (typeof value !== 'string') throw invalid(param, 'must be a string.');
  return value;
}

export function requireNonEmptyString(value: unknown, param: string): string {
  if (typeof value !== 'string' || value === '') throw invalid(param, 'must be a non-empty string.');
  return value;
}

/** `fields` without the entries left undefined, so optional upstream fields are omitted, not null. */
export function withoutUndefined(fields: Json): Json {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
