/**
 * Sampling and stopping: `temperature`, `top_p` and `stop`. Sampling is the part of a client request
 * a Messages upstream is most likely to refuse, so it is sent only where the upstream accepts it.
 */
import type { ProviderConfig } from '../../config/types';
import type { Json } from '../../json';
import { invalid, isSet, requireString, withoutUndefined } from './fields';

/** The only API version that still takes sampling parameters (docs/protocols.md#fact-1). */
const SAMPLING_API_VERSION = '2023-06-01';
/** OpenAI allows temperatures up to 2; Messages stops at 1. */
const MAX_TEMPERATURE = 1;

/**
 * `temperature` and `top_p` as sent upstream. Both are dropped under API 2026-10-21, which rejects
 * them even at default values, and beside thinking, which Messages runs only at default sampling.
 */
export function samplingFor(body: Readonly<Json>, provider: ProviderConfig, thinking: boolean): Json {
  const temperature = optionalNumber(body.temperature, 'temperature');
  const topP = optionalNumber(body.top_p, 'top_p');
  if (provider.anthropic_version !== SAMPLING_API_VERSION || thinking) return {};
  return withoutUndefined({
    temperature: temperature === undefined ? undefined : Math.min(Math.max(temperature, 0), MAX_TEMPERATURE),
    top_p: topP,
  });
}

function optionalNumber(value: unknown, param: string): number | undefined {
  if (!isSet(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(param, 'must be a number.');
  return value;
}

/** `stop` as `stop_sequences`, always a list; Messages rejects whitespace-only sequences. */
export function stopSequencesFor(value: unknown): string[] | undefined {
  if (!isSet(value)) return undefined;
  const sequences = Array.isArray(value) ? value.map((entry, k) => requireString(entry, `stop[${k}]`)) : [requireString(value, 'stop')];
  const kept = sequences.filter((sequence) => sequence.trim() !== '');
  return kept.length > 0 ? kept : undefined;
}
