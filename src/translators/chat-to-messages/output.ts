/**
 * What shapes the answer: the output limit, reasoning effort and response format. Messages carries
 * the last two together in `output_config`, beside `thinking`.
 */
import type { ModelConfig } from '../../config/types';
import { isReasoningEffort, thinkingFor, type ThinkingFields } from '../reasoning';
import { invalid, isSet, requireRecord, type Json } from './fields';

/** `max_completion_tokens`, else the deprecated `max_tokens`, else the model's configured limit. */
export function maxTokensFor(body: Readonly<Json>, model: ModelConfig): number {
  const param = isSet(body.max_completion_tokens) ? 'max_completion_tokens' : 'max_tokens';
  const value = body[param];
  if (!isSet(value)) return model.max_output_tokens;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalid(param, 'must be a positive integer.');
  return value;
}

/** The thinking fields for `reasoning_effort`; none when the client did not ask. */
export function reasoningFor(body: Readonly<Json>, model: ModelConfig, maxTokens: number): ThinkingFields {
  const effort = body.reasoning_effort;
  if (!isSet(effort)) return {};
  if (!isReasoningEffort(effort)) throw invalid('reasoning_effort', "must be one of 'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'.");
  return thinkingFor(effort, model, maxTokens, 'reasoning_effort');
}

/** `output_config`: the effort from reasoning plus the structured-output format, if either is set. */
export function outputConfigFor(effortConfig: Json | undefined, responseFormat: unknown): Json | undefined {
  const format = formatFor(responseFormat);
  if (format === undefined) return effortConfig;
  return { ...effortConfig, format };
}

/** `response_format` as a Messages output format; plain text is what Messages answers anyway. */
function formatFor(value: unknown): Json | undefined {
  if (!isSet(value)) return undefined;
  const responseFormat = requireRecord(value, 'response_format');
  switch (responseFormat.type) {
    case 'text':
      return undefined;
    case 'json_object':
      // Any JSON object: the schema that admits every object.
      return { type: 'json_schema', schema: { type: 'object' } };
    case 'json_schema': {
      const jsonSchema = requireRecord(responseFormat.json_schema, 'response_format.json_schema');
      const schema = isSet(jsonSchema.schema) ? requireRecord(jsonSchema.schema, 'response_format.json_schema.schema') : { type: 'object' };
      return { type: 'json_schema', schema };
    }
    default:
      throw invalid('response_format.type', "must be 'text', 'json_object' or 'json_schema'.");
  }
}
