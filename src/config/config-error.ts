/** The one error the config loader throws: every problem found in gateway.yaml, each with its position. */

/** One problem in a config file, pointing at the YAML node an operator has to edit. */
export interface ConfigIssue {
  /** The file as the caller named it. */
  readonly file: string;
  /** 1-based; 0 (with `col` 0) when the issue is about the whole file, e.g. it could not be read. */
  readonly line: number;
  /** 1-based column of the offending node. */
  readonly col: number;
  /** Dotted field path with `[i]` for list indices, e.g. `models.claude-sonnet-5.routes[0].provider`; empty at the root. */
  readonly path: string;
  readonly message: string;
}

/** Renders an issue as `file:line:col path: message`, the form editors and terminals link. */
export function formatIssue(issue: ConfigIssue): string {
  // A whole-file issue (unreadable file) carries a complete sentence of its own.
  if (issue.line === 0) return issue.message;
  const where = `${issue.file}:${issue.line}:${issue.col}`;
  return issue.path === '' ? `${where} ${issue.message}` : `${where} ${issue.path}: ${issue.message}`;
}

/** Orders issues by position, so the report reads top to bottom like the file. */
function sortIssues(issues: readonly ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => a.line - b.line || a.col - b.col || a.path.localeCompare(b.path) || a.message.localeCompare(b.message));
}

/** Thrown when gateway.yaml cannot be read, parsed or validated; `message` lists every issue, one per line. */
export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    const sorted = sortIssues(issues);
    super(sorted.map(formatIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = sorted;
  }
}
