/**
 * Only what answers is offered, in Chromium at a laptop's and a phone's width: `gpt-keyless`, whose
 * only provider has no key (and which comes first in gateway.yaml), is marked unavailable on Prices,
 * left out of Add Token's model list and the Playground's, whose default model answers on the first
 * Send; Admin → Providers calls the keyless provider "not configured", not "closed (healthy)".
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, watchPage, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const KEYLESS = 'gpt-keyless';

for (const viewport of [{ width: 1366, height: 900 }, { width: 390, height: 844 }]) {
  describe(`browser: only models that can answer are offered, at ${viewport.width} px`, function () {
    this.timeout(60_000);
    let browser: Browser;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let context: BrowserContext | null = null;
    let page: Page;
    let problems: PageProblems;
    const name = `olga-${viewport.width}`;

    before(async function () {
      ({ browser, fake, tg } = await startConsoleRig(this, 'offered models'));
      const olga = await createLoginAccount(tg.store, name, PASSWORD, 'admin');
      await tg.store.credit({ accountId: olga.id, amount: unitsToNano('5'), kind: 'admin', actor: 'test', note: null });
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
      await heading('Dashboard');
    });

    afterEach(async function () {
      if (this.currentTest?.state === 'failed') await saveScreenshot(page, `offered-${viewport.width}-${this.currentTest.title}`);
      await context?.close();
      context = null;
    });

    /** The account's unrevoked Playground keys, once `done` holds (or after a few seconds). */
    async function waitForKeys(accountId: string, done: (keys: { name: string | null }[]) => boolean) {
      const read = async () => (await tg.store.listKeys({ accountId })).filter((key) => key.revokedAt === null && key.name === 'Playground');
      for (let tries = 0; tries < 100; tries++) {
        const keys = await read();
        if (done(keys)) return keys;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return read();
    }

    async function heading(text: string): Promise<void> {
      await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
    }

    it('marks the keyless model unavailable on Prices and leaves it out of Add Token', async () => {
      await page.goto(`${tg.url}/console/prices`);
      await heading('Prices');
      const row = page.getByTestId('price-table').locator('tbody tr', { hasText: KEYLESS });
      await row.waitFor();
      expect(await row.locator('.badge').textContent()).to.equal('unavailable');
      expect(await page.getByTestId('price-table').locator('tbody tr', { hasText: 'gpt-priced' }).locator('.badge').count()).to.equal(0);

      await page.goto(`${tg.url}/console/token`);
      await heading('Tokens');
      await page.getByRole('button', { name: 'Add Token' }).click();
      const models = page.getByRole('group', { name: 'Allowed models' });
      await models.getByLabel('gpt-priced', { exact: true }).waitFor();
      const offered = await models.locator('input[type=checkbox]').evaluateAll((boxes) => boxes.map((box) => box.getAttribute('value')));
      expect(offered).to.include.members(['gpt-priced', 'claude-priced']);
      expect(offered).to.not.include(KEYLESS);
      expect(problems.all()).to.deep.equal([]);
    });

    it('leaves it out of the Playground, whose default model answers on the first Send', async () => {
      await page.goto(`${tg.url}/console/playground`);
      await heading('Playground');
      const select = page.getByLabel('Model', { exact: true });
      await select.waitFor();
      const options = await select.locator('option').evaluateAll((items) => items.map((item) => item.getAttribute('value')));
      expect(options).to.not.include(KEYLESS);
      expect(options).to.include('gpt-priced');
      expect(await page.getByLabel('Compare with (1)').locator('option').evaluateAll((items) => items.map((item) => item.getAttribute('value')))).to.not.include(KEYLESS);
      expect(await select.inputValue()).to.equal('gpt-priced');

      fake.enqueue(chatStream({ inputTokens: 20, outputTokens: 5, model: 'gpt-priced', text: 'Hello from the default.', includeUsage: true }));
      await page.getByLabel('Message').fill('Say hello.');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await page.getByTestId('playground-cost-value').waitFor({ timeout: 20_000 });
      expect(await page.getByTestId('playground-reply').textContent()).to.equal('Hello from the default.');

      // Ctrl+Enter sends the next turn from the message box.
      fake.enqueue(chatStream({ inputTokens: 30, outputTokens: 5, model: 'gpt-priced', text: 'And again.', includeUsage: true }));
      await page.getByLabel('Message').fill('Once more.');
      await page.getByLabel('Message').press('Control+Enter');
      await page.getByTestId('playground-reply').filter({ hasText: 'And again.' }).waitFor({ timeout: 20_000 });

      // Another visit replaces the playground key: one per account, never a pile of them.
      const account = (await tg.store.findAccountByName(name))!;
      await page.goto(`${tg.url}/console/dashboard`);
      await page.goto(`${tg.url}/console/playground`);
      await heading('Playground');
      fake.enqueue(chatStream({ inputTokens: 20, outputTokens: 5, model: 'gpt-priced', text: 'A new visit.', includeUsage: true }));
      await page.getByLabel('Message').fill('Hello again.');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await page.getByTestId('playground-reply').filter({ hasText: 'A new visit.' }).waitFor({ timeout: 20_000 });
      const everMade = (await tg.store.listKeys({ accountId: account.id })).filter((key) => key.name === 'Playground');
      expect(everMade, 'a key per visit was made').to.have.length(2);
      const live = await waitForKeys(account.id, (keys) => keys.length === 1);
      expect(live.map((key) => key.id), 'the second visit revoked the first one').to.deep.equal([everMade.find((key) => key.revokedAt === null)!.id]);
      expect(problems.all()).to.deep.equal([]);
    });

    it('calls the keyless provider "not configured" under Admin → Providers', async () => {
      await page.goto(`${tg.url}/console/admin/providers`);
      await heading('Providers');
      const row = page.getByTestId('providers-table').locator('tbody tr', { hasText: 'keyless' });
      await row.waitFor();
      expect(await row.locator('.badge').textContent()).to.equal('not configured (no key)');
      expect(await page.getByTestId('providers-table').locator('tbody tr', { hasText: 'anthropic' }).locator('.badge').textContent()).to.equal('closed (healthy)');
      expect(problems.all()).to.deep.equal([]);
    });
  });
}
