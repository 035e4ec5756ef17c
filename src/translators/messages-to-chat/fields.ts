/**
 * Readers for the client's Messages request: each check fails as a 400 that names the field, so a
 * client learns which part of its request could not be carried to a Chat Completions upstream.
 */
import { object, type Json } from '../../json';
import { GatewayError } from '../../kernel/errors';

/** The 400 for `param`, with `problem` after the field's path. */
export function invalid(param: string, problem: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `${param}: ${problem}`, { param });
}

/** Whether a field was left out: absent or `null`. */
export function isAbsent(value: unknown): boolean {
  return value === undefined || value === null;
}

/** The blocks of a content field given as a list; a string is not accepted here. */
export function blockList(content: unknown, param: string): Json[] {
  if (!Array.isArray(content)) throw invalid(param, 'must be a string or an array of content blocks.');
  return content.map(object);
}
