/** axe-core run in a page from the installed package (the context must bypass the console's CSP to add it). */
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

/** axe's serious and critical violations on the page as it is now, one line each. */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async (tags) => {
    const axe = (globalThis as unknown as { axe: { run(context: unknown, options: unknown): Promise<{ violations: Violation[] }> } }).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => ({ target: node.target, failureSummary: node.failureSummary })) }));
  }, WCAG_TAGS);
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .flatMap((violation) => violation.nodes.map((node) => `${violation.impact} ${violation.id} (${violation.help}) at ${JSON.stringify(node.target)}: ${node.failureSummary ?? ''}`));
}
