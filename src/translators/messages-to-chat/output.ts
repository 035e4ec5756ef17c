/** Limits, sampling and structured output of a Messages request, as chat fields. */
import { object, type Json } from '../../json';
import { invalid, isAbsent } from './fields';

/** OpenAI accepts at most four stop strings (docs/protocols.md#chat-request). */
const MAX_STOP_SEQUENCES = 4;

/** Limits and sampling. `top_k` is dropped: chat has no such knob, and it only narrows sampling. */
export function samplingFields(body: Json): Json {
  const fields: Json = {};
  if (!isAbsent(body.max_tokens)) fields.max_completion_tokens = body.max_tokens;
  if (!isAbsent(body.temperature)) fields.temperature = body.temperature;
  if (!isAbsent(body.top_p)) fields.top_p = body.top_p;
  const stop = stopField(body.stop_sequences);
  if (stop !== null) fields.stop = stop;
  const user = object(body.metadata).user_id;
  if (typeof user === 'string') fields.user = user;
  return fields;
}

function stopField(sequences: unknown): unknown[] | null {
  if (isAbsent(sequences)) return null;
  if (!Array.isArray(sequences)) throw invalid('stop_sequences', 'must be an array of strings.');
  if (sequences.length > MAX_STOP_SEQUENCES) {
    throw invalid('stop_sequences', `this model accepts at most ${MAX_STOP_SEQUENCES} stop sequences; got ${sequences.length}.`);
  }
  return sequences.length === 0 ? null : sequences;
}

/**
 * Structured output. Anthropic guarantees the schema is followed, which chat promises only in strict
 * mode; chat also requires a name, which Messages does not have.
 */
export function responseFormatFields(body: Json): Json {
  const format = object(body.output_config).format;
  if (isAbsent(format)) return {};
  const { type, schema } = object(format);
  if (type !== 'json_schema') throw invalid('output_config.format.type', "must be 'json_schema'.");
  if (Object.keys(object(schema)).length === 0) throw invalid('output_config.format.schema', 'must be a JSON Schema object.');
  return { response_format: { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } } };
}
