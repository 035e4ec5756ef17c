/**
 * `${VAR}` substitution in gateway.yaml string values, so keys and addresses can come from the
 * environment. Runs on the parsed document (not the raw text) so a value can never inject YAML
 * structure, and so each problem points at the scalar it came from.
 */
import { isScalar, parseDocument, type Document, type Scalar } from 'yaml';
import type { ConfigIssue } from './config-error';
import type { YamlLocator } from './locate';
import { walkYaml } from './yaml-walk';

/** The outcome of substituting one string. */
export interface Interpolated {
  readonly text: string;
  /** One message per expression that could not be substituted. */
  readonly problems: readonly string[];
  /** True when the whole input was exactly one `${...}` expression (so a plain scalar may become a number). */
  readonly wholeExpression: boolean;
}

// `$${` is the escape for a literal `${`; otherwise `${` up to the next `}` (group 2 absent: never closed).
const EXPRESSION = /\$\$\{|\$\{([^}]*)(\})?/g;
const BODY = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;
const SINGLE_EXPRESSION = /^\$\{[^}]*\}$/;

/**
 * Substitutes `${VAR}` and `${VAR:-default}` in `text`. As in POSIX shells, `:-` also applies when
 * the variable is set but empty; a bare `${VAR}` accepts an empty value and rejects only an unset one.
 */
export function interpolateString(text: string, env: NodeJS.ProcessEnv): Interpolated {
  const problems: string[] = [];
  const result = text.replace(EXPRESSION, (match: string, body: string | undefined, close: string | undefined) => {
    if (match === '$${') return '${';
    if (close === undefined) {
      problems.push(`unterminated "\${": close it with "}", or write $\${ for a literal \${`);
      return match;
    }
    const parts = BODY.exec(body ?? '');
    if (!parts) {
      problems.push(`invalid substitution "${match}": write \${NAME} or \${NAME:-default}, or $\${ for a literal \${`);
      return match;
    }
    const [, name, fallback] = parts;
    const value = env[name];
    if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
    if (value === undefined) {
      problems.push(`environment variable "${name}" is not set (write \${${name}:-} to allow it empty)`);
      return '';
    }
    return value;
  });
  return { text: result, problems, wholeExpression: SINGLE_EXPRESSION.test(text) };
}

/**
 * Reads a substituted plain scalar the way YAML would have read it had the value been written in
 * place, so `port: ${PORT:-8080}` gives the integer 8080. Only numbers, booleans and null change
 * type; an empty result stays "" (not YAML's null), so `${KEY:-}` means an empty string.
 */
export function resolvePlainScalar(text: string): string | number | boolean | null {
  if (text === '') return '';
  const parsed = parseDocument(text, { schema: 'core' });
  const node = parsed.contents;
  // Anything beyond one scalar (a comment, a `key: value`) stays the literal string.
  if (parsed.errors.length > 0 || !isScalar(node) || node.source !== text) return text;
  const value: unknown = node.value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  return text;
}

/** Substitutes every string value in the document in place, returning one issue per failed expression. */
export function interpolateDocument(doc: Document, env: NodeJS.ProcessEnv, locator: YamlLocator): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  walkYaml(doc, {
    scalarValue(node: Scalar, path) {
      if (typeof node.value !== 'string' || !node.value.includes('$')) return;
      const { text, problems, wholeExpression } = interpolateString(node.value, env);
      for (const problem of problems) issues.push(locator.issue(path, problem));
      node.value = wholeExpression && node.type === 'PLAIN' ? resolvePlainScalar(text) : text;
    },
  });
  return issues;
}
