/**
 * What shapes the answer, in its Responses spelling: `max_output_tokens`, `reasoning`, `text.format`,
 * and who asked (`safety_identifier`).
 */
import type { ModelConfig } from '../../config/types';
import type { Json } from '../../json';
import type { ThinkingFields } from '../reasoning';
import { isSet, requireRecord, requireString } from '../to-messages/fields';
import { outputFormatFor, outputLimitFor, thinkingForEffort } from '../to-messages/output';

/** `max_output_tokens` (which counts reasoning, as Messages' max_tokens does), else the model's limit. */
export function maxTokensFor(value: unknown, model: ModelConfig): number {
  return outputLimitFor(value, 'max_output_tokens', model);
}

/** The thinking fields for `reasoning.effort`; none when the client did not ask. `summary` has no equivalent. */
export function reasoningFor(value: unknown, model: ModelConfig, maxTokens: number): ThinkingFields {
  if (!isSet(value)) return {};
  return thinkingForEffort(requireRecord(value, 'reasoning').effort, 'reasoning.effort', model, maxTokens);
}

/** `text.format` as a Messages output format; a json_schema format must carry its schema. `verbosity` has no equivalent. */
export function formatFor(text: unknown): Json | undefined {
  if (!isSet(text)) return undefined;
  const value = requireRecord(text, 'text').format;
  if (!isSet(value)) return undefined;
  return outputFormatFor(requireRecord(value, 'text.format'), 'text.format', (format) => requireRecord(format.schema, 'text.format.schema'));
}

/** `safety_identifier` (or the older `user`) as the end-user id Anthropic keeps for abuse reports. */
export function metadataFor(body: Readonly<Json>): Json | undefined {
  const param = isSet(body.safety_identifier) ? 'safety_identifier' : 'user';
  if (!isSet(body[param])) return undefined;
  return { user_id: requireString(body[param], param) };
}
