/**
 * Every console page through axe-core (WCAG 2.x A and AA rules) in Chromium at a laptop's
 * (1366 × 900) and a phone's (390 × 844) width, signed out and signed in as an administrator with
 * usage, a budget alert and a refused request to show: no serious or critical violation on any page,
 * nor in the panel Add Token opens. axe is added to each page from the installed package, so the
 * context bypasses the console's CSP (the other suites check the CSP itself).
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { seriousViolations } from './axe';
import { createLoginAccount, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

const SIGNED_OUT_PAGES = [
  ['/console', 'Log in'],
  ['/console/signup', 'Create an account'],
  ['/console/prices', 'Prices'],
  ['/console/join', 'Join an organisation'],
] as const;

const SIGNED_IN_PAGES = [
  ['/console', 'Dashboard'],
  ['/console/token', 'Tokens'],
  ['/console/topup', 'Top Up'],
  ['/console/payments', 'Payments'],
  ['/console/statements', 'Statements'],
  ['/console/usage', 'Usage'],
  ['/console/analytics', 'Analytics'],
  ['/console/sessions', 'Sessions'],
  ['/console/playground', 'Playground'],
  ['/console/prices', 'Prices'],
  ['/console/account', 'Account'],
  ['/console/members', 'Organisations'],
  ['/console/admin/accounts', 'Accounts'],
  ['/console/admin/orgs', 'Organisations'],
  ['/console/admin/codes', 'Redemption codes'],
  ['/console/admin/payments', 'Payments'],
  ['/console/admin/providers', 'Providers'],
  ['/console/admin/audit', 'Audit log'],
  ['/console/admin/gateway', 'Gateway totals'],
] as const;

for (const viewport of [{ width: 1366, height: 900 }, { width: 390, height: 844 }]) {
  describe(`browser: axe-core on every console page, at ${viewport.width} px`, function () {
    this.timeout(180_000);
    let browser: Browser;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let context: BrowserContext | null = null;
    let page: Page;
    const name = `axel-${viewport.width}`;

    before(async function () {
      ({ browser, fake, tg } = await startConsoleRig(this, 'accessibility'));
      const axel = await createLoginAccount(tg.store, name, PASSWORD, 'admin');
      await tg.store.credit({ accountId: axel.id, amount: unitsToNano('20'), kind: 'admin', actor: 'test', note: null });
      const key = await tg.createKey({ accountId: axel.id, name: 'laptop' });
      await tg.store.setKeyLimits(key.id, { budget: { amount: 2_000_000n, period: 'month', timezone: 'UTC' } });
      fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 150, model: 'gpt-priced' }));
      for (const model of ['gpt-priced', 'gpt-priced', 'no-such-model']) {
        const res = await fetch(`${tg.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
          body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
        });
        await res.arrayBuffer();
      }
      // A budget alert for the banner, a refused request for Usage's badges.
      await waitFor(() => tg.store.listAlerts({ accountId: axel.id }), (alerts) => alerts.length > 0);
      await waitFor(() => tg.store.refusals.list({ limit: 10 }), (rows) => rows.length >= 2);
    });

    after(async () => {
      await context?.close();
      await stopConsoleRig({ browser, fake, tg });
    });

    beforeEach(async () => {
      context = await browser.newContext({ viewport, locale: 'en-US', bypassCSP: true, permissions: ['clipboard-read', 'clipboard-write'] });
      page = await context.newPage();
    });

    afterEach(async function () {
      if (this.currentTest?.state === 'failed') await saveScreenshot(page, `axe-${viewport.width}-${this.currentTest.title}`);
      await context?.close();
      context = null;
    });

    async function visit(path: string, title: string): Promise<string[]> {
      await page.goto(`${tg.url}${path}`);
      await page.getByRole('heading', { level: 1, name: title, exact: true }).waitFor();
      // Tables, charts and banners load after the heading.
      await page.waitForLoadState('networkidle');
      return (await seriousViolations(page)).map((line) => `${path}: ${line}`);
    }

    it('finds no serious or critical violation on the signed-out pages', async () => {
      const found: string[] = [];
      for (const [path, title] of SIGNED_OUT_PAGES) found.push(...(await visit(path, title)));
      expect(found).to.deep.equal([]);
    });

    it('finds no serious or critical violation on any signed-in page, nor in the panel after Add Token', async () => {
      await page.goto(`${tg.url}/console`);
      await page.getByLabel('Name or e-mail').fill(name);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Dashboard', exact: true }).waitFor();
      const found: string[] = [];
      for (const [path, title] of SIGNED_IN_PAGES) found.push(...(await visit(path, title)));

      await page.goto(`${tg.url}/console/token`);
      await page.getByRole('button', { name: 'Add Token' }).click();
      await page.getByLabel('Name', { exact: true }).fill('axe');
      found.push(...(await seriousViolations(page)).map((line) => `Add Token form: ${line}`));
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByTestId('connect').waitFor();
      found.push(...(await seriousViolations(page)).map((line) => `new token panel: ${line}`));
      expect(found).to.deep.equal([]);
    });
  });
}
