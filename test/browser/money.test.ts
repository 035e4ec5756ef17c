/**
 * Money reads as money, in Chromium at a laptop's and a phone's width, on a gateway whose
 * `plugins.billing.currency` is eur: the balance in euros to the cent with the exact figure on hover
 * (on the dashboard, in the header and on Top Up), an amount under a cent as "< €0.01", the chart's
 * value axis at round steps, Available only when something is held, and the API's figures exact.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { formatUnits, unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, watchPage, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const CREDIT = '22.685743';
/** Yesterday's spend (the chart's busiest day) and today's, under a cent. */
const YESTERDAY = '1.234567';
const TODAY = '0.000042';

function charge(accountId: string, keyId: string, id: string, cost: string, createdAt: Date): ChargeRecord {
  return {
    ...PLAIN_CHARGE,
    requestId: id,
    accountId,
    keyId,
    model: 'gpt-priced',
    provider: 'openai',
    endpoint: 'chat',
    inputTokens: 10,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: 0,
    outputTokens: 5,
    imageInputTokens: 0,
    imageOutputTokens: 0,
    images: 0,
    cost: unitsToNano(cost),
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 100,
    createdAt,
  };
}

for (const viewport of [{ width: 1366, height: 900 }, { width: 390, height: 844 }]) {
  describe(`browser: money reads as money, at ${viewport.width} px`, function () {
    this.timeout(60_000);
    let browser: Browser;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let context: BrowserContext | null = null;
    let page: Page;
    let problems: PageProblems;
    let balance: string;
    const name = `mona-${viewport.width}`;

    before(async function () {
      ({ browser, fake, tg } = await startConsoleRig(this, 'money', { currency: 'eur' }));
      const mona = await createLoginAccount(tg.store, name, PASSWORD);
      await tg.store.credit({ accountId: mona.id, amount: unitsToNano(CREDIT), kind: 'admin', actor: 'test', note: null });
      const key = await tg.createKey({ accountId: mona.id, name: 'laptop' });
      await tg.store.recordCharges([
        charge(mona.id, key.id, 'req_money_yesterday', YESTERDAY, new Date(Date.now() - 86_400_000)),
        charge(mona.id, key.id, 'req_money_today', TODAY, new Date()),
      ]);
      balance = formatUnits((await tg.store.balance(mona.id)).balance);
    });

    after(async () => {
      await context?.close();
      await stopConsoleRig({ browser, fake, tg });
    });

    beforeEach(async () => {
      context = await newContext(browser, viewport);
      page = await context.newPage();
      problems = await watchPage(page);
      await page.goto(`${tg.url}/console`);
      await page.getByLabel('Name or e-mail').fill(name);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Dashboard', exact: true }).waitFor();
    });

    afterEach(async function () {
      if (this.currentTest?.state === 'failed') await saveScreenshot(page, `money-${viewport.width}-${this.currentTest.title}`);
      await context?.close();
      context = null;
    });

    it('shows the balance in the currency to the cent, exact on hover, and the API keeps every digit', async () => {
      // 22.685743 − 1.234567 − 0.000042 = 21.451134.
      expect(balance).to.equal('21.451134');
      const card = page.getByTestId('balance');
      await card.waitFor();
      expect(await card.textContent()).to.equal('€21.45');
      expect(await card.getAttribute('title')).to.equal(balance);
      const header = page.getByTestId('header-balance');
      await header.filter({ hasText: '€21.45' }).waitFor();
      expect(await header.getAttribute('href')).to.equal('/console/topup');
      expect(await page.getByTestId('today-cost').textContent()).to.equal('< €0.01');
      expect(await page.getByTestId('today-cost').getAttribute('title')).to.equal(TODAY);
      // Nothing is held: Available would only repeat the balance.
      expect(await page.getByTestId('available').count()).to.equal(0);
      const api = await page.evaluate(async () => (await fetch('/api/account')).json() as Promise<{ balance: string }>);
      expect(api.balance).to.equal(balance);
      expect(problems.all()).to.deep.equal([]);
    });

    it('labels the chart at round steps in the currency', async () => {
      const ticks = page.getByTestId('chart-ticks').locator('text');
      await ticks.first().waitFor();
      // The busiest day spent 1.234567: steps of 0.50 up to the first one above it.
      expect(await ticks.allTextContents()).to.deep.equal(['€0.00', '€0.50', '€1.00', '€1.50']);
      expect(problems.all()).to.deep.equal([]);
    });

    it('shows the balance on Top Up, and usage and prices in the currency', async () => {
      await page.goto(`${tg.url}/console/topup`);
      await page.getByRole('heading', { level: 1, name: 'Top Up', exact: true }).waitFor();
      const shown = page.getByTestId('topup-balance-value');
      await shown.waitFor();
      expect(await page.getByTestId('topup-balance').textContent()).to.equal('Your balance: €21.45');
      expect(await shown.getAttribute('title')).to.equal(balance);

      await page.goto(`${tg.url}/console/usage`);
      const total = page.getByTestId('usage-total-cost');
      await total.waitFor();
      expect(await total.textContent()).to.equal('€1.23');
      expect(await total.getAttribute('title')).to.equal('1.234609');

      await page.goto(`${tg.url}/console/prices`);
      await page.getByTestId('price-table').waitFor();
      const row = page.getByTestId('price-table').locator('tbody tr', { hasText: 'claude-priced' });
      // Prices in full: 3.75 per 1M cache writes, 0.30 cache hits.
      expect(await row.locator('td').evaluateAll((cells) => cells.slice(2, 6).map((cell) => (cell.textContent ?? '').trim()))).to.deep.equal(['€3.00', '€3.75', '€0.30', '€15.00']);
      expect(problems.all()).to.deep.equal([]);
    });
  });
}
