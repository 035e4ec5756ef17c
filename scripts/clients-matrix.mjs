#!/usr/bin/env node
/**
 * Writes the compatibility matrix of docs/clients.md (between its clients-matrix markers) from the
 * client suite's last run, test/clients/last-run.json: one row per client and feature, one column
 * per model family, each cell "works", "refused: <reason>" or "FAILS" (a case that did not pass).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = JSON.parse(readFileSync(`${root}/test/clients/last-run.json`, 'utf8'));
const START = '<!-- clients-matrix:start -->\n';
const END = '\n<!-- clients-matrix:end -->';

const rows = new Map();
for (const result of run.results) {
  const key = `${result.client}\u0000${result.feature}`;
  if (!rows.has(key)) rows.set(key, { client: result.client, feature: result.feature, cells: {}, fixes: new Set() });
  const row = rows.get(key);
  const outcome = result.passed ? (result.expect === 'works' ? 'works' : result.expect) : 'FAILS';
  row.cells[result.family] = `${outcome} (\`${result.model}\`)`;
  if (result.fix !== null) row.fixes.add(result.fix);
}

const lines = [
  `Last run: ${run.date.slice(0, 10)}, Node ${run.node}, ${run.results.length} cases in ${run.seconds.toFixed(1)} s: ${run.passed} passed, ${run.failed} failed.`,
  '',
  '| Client | Feature | Anthropic model | OpenAI model | Fix (issue 16) |',
  '|---|---|---|---|---|',
  ...[...rows.values()].map((row) =>
    `| ${row.client} | ${row.feature} | ${row.cells.anthropic ?? '–'} | ${row.cells.openai ?? '–'} | ${[...row.fixes].sort().join(', ')} |`),
];
const doc = readFileSync(`${root}/docs/clients.md`, 'utf8');
const start = doc.indexOf(START);
const end = doc.indexOf(END);
if (start === -1 || end === -1) throw new Error('docs/clients.md lacks the clients-matrix markers');
writeFileSync(`${root}/docs/clients.md`, doc.slice(0, start + START.length) + lines.join('\n') + doc.slice(end));
console.log(`docs/clients.md: matrix of ${rows.size} rows written from the run of ${run.date}`);
