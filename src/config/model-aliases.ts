/**
 * The model a client's `model` names: a model's own id, else one of its aliases. An alias may be a
 * pattern where `*` matches any run of characters, so an operator can serve the names clients send
 * by default (Claude Code asks for its newest model) without renaming the price list.
 */
import type { GatewayConfig, ModelConfig } from './types';

interface AliasTable {
  readonly exact: ReadonlyMap<string, ModelConfig>;
  /** Longest pattern first: the most specific pattern wins. */
  readonly patterns: ReadonlyArray<{ readonly pattern: RegExp; readonly length: number; readonly model: ModelConfig }>;
}

/** Built once per loaded config (configs are frozen, and a reload makes a new one). */
const tables = new WeakMap<GatewayConfig['models'], AliasTable>();

function isAliasPattern(alias: string): boolean {
  return alias.includes('*');
}

function patternFor(alias: string): RegExp {
  const literal = alias.split('*').map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${literal.join('.*')}$`);
}

function tableFor(models: GatewayConfig['models']): AliasTable {
  const cached = tables.get(models);
  if (cached !== undefined) return cached;
  const exact = new Map<string, ModelConfig>();
  const patterns: Array<AliasTable['patterns'][number]> = [];
  for (const model of Object.values(models)) {
    for (const alias of model.aliases ?? []) {
      if (isAliasPattern(alias)) patterns.push({ pattern: patternFor(alias), length: alias.length, model });
      else exact.set(alias, model);
    }
  }
  patterns.sort((a, b) => b.length - a.length);
  const table = { exact, patterns };
  tables.set(models, table);
  return table;
}

/** The model `name` refers to, or undefined when no id, alias or pattern matches. */
export function findModel(config: Pick<GatewayConfig, 'models'>, name: string): ModelConfig | undefined {
  if (Object.hasOwn(config.models, name)) return config.models[name];
  const table = tableFor(config.models);
  return table.exact.get(name) ?? table.patterns.find((entry) => entry.pattern.test(name))?.model;
}
