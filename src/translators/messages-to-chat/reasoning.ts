/** Messages `thinking` (and `output_config.effort`) as chat's `reasoning_effort`. */
import type { ModelConfig } from '../../config/types';
import { object, type Json } from '../../json';
import { invalid, isAbsent } from './fields';

/** Anthropic `output_config.effort` levels; chat's `reasoning_effort` takes the same words. */
const EFFORTS = new Set(['low', 'medium', 'high', 'xhigh', 'max']);
const DEFAULT_ADAPTIVE_EFFORT = 'medium';

/** Thinking budgets up to these sizes read as these efforts; anything larger is `high`. */
const EFFORT_BY_BUDGET: ReadonlyArray<readonly [number, string]> = [
  [1024, 'low'],
  [4096, 'medium'],
];

/**
 * Thinking as `reasoning_effort`, sent only when thinking was asked for. A model configured with
 * `thinking: none` cannot reason: adaptive thinking lets a model answer without reasoning, so it is
 * dropped there, while an explicit budget is refused like any other request the model cannot meet.
 */
export function reasoningFields(body: Json, model: ModelConfig): Json {
  if (isAbsent(body.thinking)) return {};
  const thinking = object(body.thinking);
  switch (thinking.type) {
    case 'disabled':
      return {};
    case 'adaptive':
      return model.thinking === 'none' ? {} : { reasoning_effort: adaptiveEffort(body.output_config) };
    case 'enabled':
      if (model.thinking === 'none') throw invalid('thinking', `the model '${model.id}' does not support reasoning; remove thinking.`);
      return { reasoning_effort: effortForBudget(thinking.budget_tokens) };
    default:
      throw invalid('thinking.type', "must be 'enabled', 'adaptive' or 'disabled'.");
  }
}

function adaptiveEffort(outputConfig: unknown): string {
  const effort = object(outputConfig).effort;
  if (isAbsent(effort)) return DEFAULT_ADAPTIVE_EFFORT;
  if (typeof effort !== 'string' || !EFFORTS.has(effort)) {
    throw invalid('output_config.effort', `must be one of ${[...EFFORTS].join(', ')}.`);
  }
  return effort;
}

function effortForBudget(budget: unknown): string {
  if (typeof budget !== 'number' || !Number.isFinite(budget)) throw invalid('thinking.budget_tokens', 'must be a number.');
  return EFFORT_BY_BUDGET.find(([limit]) => budget <= limit)?.[1] ?? 'high';
}
