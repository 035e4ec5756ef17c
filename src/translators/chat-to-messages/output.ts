/**
 * What shapes the answer: the output limit, `reasoning_effort` and `response_format`, in their Chat
 * Completions spelling.
 */
import type { ModelConfig } from '../../config/types';
import type { Json } from '../../json';
import type { ThinkingFields } from '../reasoning';
import { isSet, requireRecord } from '../to-messages/fields';
import { outputFormatFor, outputLimitFor, thinkingForEffort } from '../to-messages/output';

/** `max_completion_tokens`, else the deprecated `max_tokens`, else the model's configured limit. */
export function maxTokensFor(body: Readonly<Json>, model: ModelConfig): number {
  const param = isSet(body.max_completion_tokens) ? 'max_completion_tokens' : 'max_tokens';
  return outputLimitFor(body[param], param, model);
}

/** The thinking fields for `reasoning_effort`; none when the client did not ask. */
export function reasoningFor(body: Readonly<Json>, model: ModelConfig, maxTokens: number): ThinkingFields {
  return thinkingForEffort(body.reasoning_effort, 'reasoning_effort', model, maxTokens);
}

/** `response_format` as a Messages output format; a json_schema format may leave out its schema. */
export function formatFor(value: unknown): Json | undefined {
  if (!isSet(value)) return undefined;
  return outputFormatFor(requireRecord(value, 'response_format'), 'response_format', (responseFormat) => {
    const jsonSchema = requireRecord(responseFormat.json_schema, 'response_format.json_schema');
    return isSet(jsonSchema.schema) ? requireRecord(jsonSchema.schema, 'response_format.json_schema.schema') : { type: 'object' };
  });
}
