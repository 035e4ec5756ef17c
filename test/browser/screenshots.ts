/**
 * The console screenshots in docs/console.md, made in Debian's Chromium at a laptop's 1366×900 and a
 * phone's 390×844 (the `-phone` files) from a gateway with an in-memory store:
 *   docs/console-dashboard.png  the dashboard of a user with a balance and eleven days of spend
 *   docs/console-usage.png      Usage: the newest requests, two of them refused, and the totals
 *   docs/console-token.png      the Tokens page right after Add Token: the new secret shown once, then the
 *                               base URLs and snippets to use it
 *
 *   npm run build && node dist/test/browser/screenshots.js
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import { hashRedemptionCode } from '../../src/billing/redemption';
import type { ChargeRecord } from '../../src/store/store';
import { startTestGateway } from '../helpers/test-gateway';
import { chromiumProblem, consoleYaml, createLoginAccount, createRedemptionCode, launchChromium } from './browser-helpers';
import { PLAIN_CHARGE } from '../helpers/charges';

const DOCS_DIR = path.resolve(__dirname, '..', '..', '..', 'docs');
const VIEWPORTS = [
  { suffix: '', width: 1366, height: 900 },
  { suffix: '-phone', width: 390, height: 844 },
] as const;
const DAY_MS = 86_400_000;
const PASSWORD = 'screenshot-password';

/** Spend per day, oldest first, ending today: a believable fortnight with quiet days. */
const DAILY_SPEND: readonly (readonly [daysAgo: number, requests: number, cost: string])[] = [
  [12, 14, '0.42'],
  [11, 22, '0.61'],
  [10, 9, '0.18'],
  [8, 31, '0.95'],
  [7, 40, '1.27'],
  [6, 26, '0.74'],
  [5, 12, '0.33'],
  [3, 35, '1.08'],
  [2, 48, '1.46'],
  [1, 29, '0.88'],
  [0, 7, '0.21'],
];

/** `requests` charges on the day `daysAgo` days back (at noon UTC; today, within the last hour) adding up to `cost`. */
function chargesOfDay(accountId: string, keyId: string, daysAgo: number, requests: number, cost: string): ChargeRecord[] {
  const now = Date.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const at = daysAgo === 0 ? Math.max(today, now - 3_600_000) : today - daysAgo * DAY_MS + DAY_MS / 2;
  const total = unitsToNano(cost);
  const each = total / BigInt(requests);
  return Array.from({ length: requests }, (_, index) => ({
    requestId: `req_screenshot_${daysAgo}_${index}`,
    accountId,
    keyId,
    model: index % 3 === 0 ? 'claude-priced' : 'gpt-priced',
    provider: index % 3 === 0 ? 'anthropic' : 'openai',
    endpoint: index % 3 === 0 ? '/v1/messages' : '/v1/chat/completions',
    inputTokens: 1800 + index * 37,
    cacheWriteTokens: 0, cacheWrite1hTokens: 0,
    cacheReadTokens: 0,
    outputTokens: 420 + index * 11,
    imageInputTokens: 0,
    imageOutputTokens: 0,
    // The last charge of the day takes the remainder, so the day adds up exactly.
    cost: index === requests - 1 ? total - each * BigInt(requests - 1) : each,
    ...PLAIN_CHARGE,
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 900 + index * 13,
    createdAt: new Date(at + index * 1000),
  }));
}

async function logIn(page: Page, origin: string, name: string): Promise<void> {
  await page.goto(`${origin}/console`);
  await page.getByLabel('Name or e-mail').fill(name);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
}

async function main(): Promise<void> {
  const problem = chromiumProblem();
  if (problem !== null) throw new Error(problem);
  mkdirSync(DOCS_DIR, { recursive: true });

  const tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') });
  const browser = await launchChromium();
  try {
    const user = await createLoginAccount(tg.store, 'alice', PASSWORD);
    const key = await tg.createKey({ accountId: user.id, name: 'laptop' });
    await tg.createKey({ accountId: user.id, name: 'ci-runner' });
    const redeemed = await tg.store.redeemCode(hashRedemptionCode(await createRedemptionCode(tg.store, '25')), user.id, null);
    if (!redeemed.ok) throw new Error(`the screenshot account's code did not redeem: ${redeemed.reason}`);
    await tg.store.recordCharges(DAILY_SPEND.flatMap(([daysAgo, requests, cost]) => chargesOfDay(user.id, key.id, daysAgo, requests, cost)));

    const recent = Date.now() - 60_000;
    await tg.store.refusals.record([
      { id: 'req_screenshot_refused_1', createdAt: new Date(recent), accountId: user.id, keyId: key.id, memberAccountId: null, address: null, model: 'gpt-priced', endpoint: 'chat', status: 402, code: 'TOLLGATE_ERR_BUDGET_EXCEEDED', level: 'budget:key:month', count: 1, sessionId: null },
      { id: 'req_screenshot_refused_2', createdAt: new Date(recent - 30_000), accountId: user.id, keyId: key.id, memberAccountId: null, address: null, model: 'gpt-5-typo', endpoint: 'chat', status: 404, code: 'TOLLGATE_ERR_MODEL_NOT_FOUND', level: null, count: 1, sessionId: null },
    ]);
    let tokens = 0;
    for (const viewport of VIEWPORTS) {
      const context = await browser.newContext({ viewport, colorScheme: 'light', locale: 'en-US' });
      const page = await context.newPage();
      await logIn(page, tg.url, user.name);
      const shot = async (name: string) => {
        const file = path.join(DOCS_DIR, `console-${name}${viewport.suffix}.png`);
        await page.screenshot({ path: file });
        console.log(`wrote ${path.relative(process.cwd(), file)}`);
      };

      await page.getByTestId('balance').waitFor();
      await page.locator('.chart-block svg.chart').waitFor();
      await shot('dashboard');

      await page.goto(`${tg.url}/console/usage`);
      await page.getByTestId('usage-table').locator('tbody tr').first().waitFor();
      await page.getByTestId('usage-totals').waitFor();
      // From the totals line down: the filters above it are the same on every visit.
      await page.getByTestId('usage-totals').evaluate((line) => (line as unknown as { scrollIntoView(options: { block: string }): void }).scrollIntoView({ block: 'start' }));
      await shot('usage');

      await page.goto(`${tg.url}/console/token`);
      await page.getByTestId('key-table').waitFor();
      await page.getByRole('button', { name: 'Add Token' }).click();
      tokens += 1;
      const name = `notebook-${tokens}`;
      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByLabel('Spend limit').fill('10');
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByTestId('new-key-secret').waitFor();
      // The list below refreshes after the panel opens; the shot waits for the new key in it.
      await page.getByTestId('key-table').getByText(name, { exact: true }).waitFor();
      await page.getByTestId('new-key-secret').scrollIntoViewIfNeeded();
      await shot('token');
      await context.close();
    }
  } finally {
    await browser.close();
    await tg.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
