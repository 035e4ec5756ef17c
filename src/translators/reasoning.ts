/**
 * Reasoning effort (OpenAI `reasoning_effort`, Responses `reasoning.effort`) as the thinking
 * configuration an Anthropic model accepts, chosen by the model's `thinking` setting in gateway.yaml:
 * adaptive models take `thinking: {type: "adaptive"}` with `output_config.effort`; older models reject
 * that and take `thinking: {type: "enabled", budget_tokens}` (docs/protocols.md#fact-10).
 */
import type { ModelConfig } from '../config/types';
import { GatewayError } from '../kernel/errors';

/** The OpenAI effort levels; `none` turns reasoning off. */
export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

const ADAPTIVE_EFFORT: Readonly<Record<Exclude<ReasoningEffort, 'none'>, string>> = {
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'max',
};

/** Thinking budgets by effort; Anthropic's minimum budget is 1,024 tokens. */
const BUDGET_TOKENS: Readonly<Record<Exclude<ReasoningEffort, 'none'>, number>> = {
  minimal: 1024,
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 8192,
  max: 16384,
};

const MIN_BUDGET_TOKENS = 1024;

/** The Messages fields that carry reasoning, merged into the upstream request. */
export interface ThinkingFields {
  readonly thinking?: Record<string, unknown>;
  readonly output_config?: Record<string, unknown>;
}

/**
 * The thinking fields for `effort` on `model` with an output limit of `maxTokens` (thinking tokens
 * count toward it, in both protocols). `param` names the client's field in errors.
 */
export function thinkingFor(effort: ReasoningEffort, model: ModelConfig, maxTokens: number, param: string): ThinkingFields {
  if (effort === 'none') return {};
  switch (model.thinking) {
    case 'none':
      throw new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `The model '${model.id}' does not support reasoning; remove ${param}.`, { param });
    case 'adaptive':
      return { thinking: { type: 'adaptive' }, output_config: { effort: ADAPTIVE_EFFORT[effort] } };
    case 'budget': {
      // The budget must stay below max_tokens; a limit too small for the minimum budget cannot think.
      if (maxTokens <= MIN_BUDGET_TOKENS) {
        throw new GatewayError(
          'TOLLGATE_ERR_REQUEST_INVALID',
          `${param} needs an output limit above ${MIN_BUDGET_TOKENS} tokens on '${model.id}'; raise the limit or drop ${param}.`,
          { param },
        );
      }
      return { thinking: { type: 'enabled', budget_tokens: Math.min(BUDGET_TOKENS[effort], maxTokens - 1) } };
    }
  }
}

/** Whether `value` is an effort level; anything else is left to request validation. */
export function isReasoningEffort(value: unknown): value is ReasoningEffort {
  return typeof value === 'string' && value in ADAPTIVE_EFFORT || value === 'none';
}
