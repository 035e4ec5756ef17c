/**
 * gateway.yaml → GatewayConfig, step by step: parse keeping positions → substitute
 * `${VAR}` → validate against the schema, applying defaults → derive fields → limits the file leaves
 * out from the model catalog → cross-field checks →
 * deep-freeze. Every problem found is collected and thrown together as one ConfigError.
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { ConfigError, type ConfigIssue } from './config-error';
import { budgetConfigIssues } from './budget-checks';
import { withCatalogLimits } from './catalog-limits';
import { crossCheck, crossCheckValidParts } from './cross-checks';
import { deepFreeze } from './deep-freeze';
import { deriveConfig, type ValidatedGatewayData } from './derive';
import { metricsTokenIssues } from './metrics-token';
import { interpolateDocument } from './interpolate';
import { YamlLocator } from './locate';
import { validateGatewaySchema } from './schema';
import { schemaErrorsToIssues } from './schema-messages';
import type { GatewayConfig } from './types';
import { duplicateKeyIssues, syntaxIssues } from './yaml-issues';

/** Reads, validates and freezes a config file; throws ConfigError listing every problem (an unreadable file is one). */
export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([{ file, line: 0, col: 0, path: '', message: `cannot read ${file}: ${readFailure(err)}` }]);
  }
  return parseConfig(text, file, env);
}

/** Validates config text; `source` names the file in messages and in `GatewayConfig.source`. Throws ConfigError. */
export function parseConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const lineCounter = new LineCounter();
  // uniqueKeys off: duplicateKeyIssues reports duplicates with their field path, which the parser cannot.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false, schema: 'core' });
  const locator = new YamlLocator(doc, lineCounter, source);
  const syntax = syntaxIssues(doc, locator);
  // After a syntax error the tree is a guess; issues found in it would mislead.
  if (syntax.length > 0) throw new ConfigError(syntax);

  const issues = [...duplicateKeyIssues(doc, locator)];
  const substitutionIssues = interpolateDocument(doc, env, locator);
  const data = toPlainData(doc, locator, issues);
  if (data === undefined) throw new ConfigError([...issues, ...substitutionIssues]);

  const schemaErrors = validateGatewaySchema(data);
  issues.push(...schemaErrorsToIssues(schemaErrors, data, locator));
  const config = schemaErrors.length === 0 ? withCatalogLimits(deriveConfig(data as ValidatedGatewayData, source), locator) : undefined;
  // Cross-field rules assume the schema's shape: with schema errors they still run on every provider
  // and model that has it, so one `config check` reports both kinds of problem together.
  issues.push(...(config ? crossCheck(config, locator) : crossCheckValidParts(data, schemaErrors, locator)));
  if (config) issues.push(...budgetConfigIssues(config, locator), ...metricsTokenIssues(config, locator));

  const reported = [...substitutionIssues, ...withoutKnockOns(issues, substitutionIssues)];
  if (reported.length > 0 || !config) throw new ConfigError(reported);
  return deepFreeze(config);
}

/** Drops issues about a value whose `${VAR}` already failed: they would only restate that issue. */
function withoutKnockOns(issues: readonly ConfigIssue[], substitutionIssues: readonly ConfigIssue[]): ConfigIssue[] {
  const failedPaths = new Set(substitutionIssues.map((issue) => issue.path));
  return issues.filter((issue) => !failedPaths.has(issue.path));
}

/**
 * The document as plain JS; an empty file is an empty mapping, so defaults and required fields apply.
 * Undefined (with an issue added) when the document cannot be expanded.
 */
function toPlainData(doc: Document, locator: YamlLocator, issues: ConfigIssue[]): unknown {
  try {
    return (doc.toJS() as unknown) ?? {};
  } catch (err) {
    // toJS throws on alias bombs (more than maxAliasCount expansions), which must not be expanded.
    issues.push(locator.issue([], `YAML: ${err instanceof Error ? err.message : String(err)}`));
    return undefined;
  }
}

function readFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  return err instanceof Error ? err.message : String(err);
}
