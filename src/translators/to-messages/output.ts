/**
 * What shapes the answer: the output limit, reasoning effort and structured-output format. Messages
 * carries the last two together in `output_config`, beside `thinking`.
 */
import type { ModelConfig } from '../../config/types';
import type { Json } from '../../json';
import { isReasoningEffort, thinkingFor, type ThinkingFields } from '../reasoning';
import { invalid, isSet } from './fields';

/** The output limit the client set in `param`, else the model's configured limit. */
export function outputLimitFor(value: unknown, param: string, model: ModelConfig): number {
  if (!isSet(value)) return model.max_output_tokens;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalid(param, 'must be a positive integer.');
  return value;
}

/** The thinking fields for the effort the client set in `param`; none when it did not ask. */
export function thinkingForEffort(effort: unknown, param: string, model: ModelConfig, maxTokens: number): ThinkingFields {
  if (!isSet(effort)) return {};
  if (!isReasoningEffort(effort)) throw invalid(param, "must be one of 'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'.");
  return thinkingFor(effort, model, maxTokens, param);
}

/**
 * A client's response format (read from `param`) as a Messages output format; plain text is what
 * Messages answers anyway. `schemaFor` reads a json_schema format's schema, whose place differs
 * between the OpenAI APIs.
 */
export function outputFormatFor(format: Json, param: string, schemaFor: (format: Json) => Json): Json | undefined {
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      // Any JSON object: the schema that admits every object.
      return { type: 'json_schema', schema: { type: 'object' } };
    case 'json_schema':
      return { type: 'json_schema', schema: schemaFor(format) };
    default:
      throw invalid(`${param}.type`, "must be 'text', 'json_object' or 'json_schema'.");
  }
}
