/**
 * The Playground in Chromium at a laptop's and a phone's width: its own key is left out of Tokens
 * (behind a "show" toggle); its turns show in Sessions as one "Playground" row, not a row per visit;
 * "View code" shows the request as curl and SDK snippets, and the curl one, run as it is with a real
 * key, gets an answer through the gateway.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { Account } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, watchPage, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

for (const viewport of [{ width: 1366, height: 900 }, { width: 390, height: 844 }]) {
  describe(`browser: the Playground's key, sessions and code, at ${viewport.width} px`, function () {
    this.timeout(60_000);
    let browser: Browser;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let context: BrowserContext | null = null;
    let page: Page;
    let problems: PageProblems;

    before(async function () {
      ({ browser, fake, tg } = await startConsoleRig(this, 'playground'));
    });

    after(async () => {
      await context?.close();
      await stopConsoleRig({ browser, fake, tg });
    });

    beforeEach(async () => {
      context = await newContext(browser, viewport);
      page = await context.newPage();
      problems = await watchPage(page);
    });

    afterEach(async function () {
      if (this.currentTest?.state === 'failed') await saveScreenshot(page, `playground-${viewport.width}-${this.currentTest.title}`);
      await context?.close();
      context = null;
    });

    async function heading(text: string): Promise<void> {
      await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
    }

    /** A new account with a balance, signed in on the dashboard. */
    async function signedIn(name: string): Promise<Account> {
      const account = await createLoginAccount(tg.store, name, PASSWORD);
      await tg.store.credit({ accountId: account.id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
      await page.goto(`${tg.url}/console`);
      await page.getByLabel('Name or e-mail').fill(name);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await heading('Dashboard');
      return account;
    }

    /** One Playground turn on the default model (gpt-priced), its cost shown once it settled. */
    async function playgroundTurn(message: string, reply: string): Promise<void> {
      fake.enqueue(chatStream({ inputTokens: 20, outputTokens: 5, model: 'gpt-priced', text: reply, includeUsage: true }));
      await page.getByLabel('Message').fill(message);
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await page.getByTestId('playground-reply').filter({ hasText: reply }).waitFor({ timeout: 20_000 });
      await page.getByTestId('playground-cost-value').last().waitFor({ timeout: 20_000 });
    }

    async function openPlayground(): Promise<void> {
      await page.goto(`${tg.url}/console/playground`);
      await heading('Playground');
      await page.getByLabel('Model', { exact: true }).waitFor();
    }

    it('leaves the playground key out of Tokens after a visit, shown only when asked for', async () => {
      const account = await signedIn(`pia-${viewport.width}`);
      await tg.createKey({ accountId: account.id, name: 'laptop' });
      await openPlayground();
      await playgroundTurn('Say hello.', 'Hello from the playground.');
      const playgroundKey = (await tg.store.listKeys({ accountId: account.id })).find((key) => key.name === 'Playground' && key.revokedAt === null);
      expect(playgroundKey, 'the visit made its key').to.not.equal(undefined);

      await page.goto(`${tg.url}/console/token`);
      await heading('Tokens');
      const table = page.getByTestId('key-table');
      await table.locator('tbody tr', { hasText: 'laptop' }).waitFor();
      expect(await table.locator('tbody tr').count(), 'only the account\'s own token').to.equal(1);
      expect(await table.getByText('Playground', { exact: true }).count()).to.equal(0);
      expect(await table.textContent()).to.not.include(playgroundKey!.last4);

      // Behind a toggle it is there, for whoever wants to see or revoke it.
      await page.getByLabel(/Show the Playground's own key/).check();
      await table.locator('tbody tr', { hasText: 'Playground' }).waitFor();
      expect(await page.getByTestId('key-table').locator('tbody tr').count()).to.equal(2);
      expect(problems.all()).to.deep.equal([]);
    });

    it('shows the turns of two visits in Sessions as one Playground row, which opens on both', async () => {
      await signedIn(`pete-${viewport.width}`);
      await openPlayground();
      await playgroundTurn('Say hello.', 'Hello from the first visit.');
      // A second visit is a session of its own: still the same row.
      await page.goto(`${tg.url}/console/dashboard`);
      await openPlayground();
      await playgroundTurn('Say hello again.', 'Hello from the second visit.');

      await page.goto(`${tg.url}/console/sessions`);
      await heading('Sessions');
      const table = page.getByTestId('sessions-table');
      const group = table.getByTestId('session-group');
      await group.waitFor();
      expect(await group.textContent()).to.equal('Playground (every visit)');
      expect(await table.locator('tbody tr').count(), 'one row, not one per visit').to.equal(1);
      expect(await table.textContent()).to.not.include('playground-');
      expect(await table.locator('tbody tr').first().locator('td[data-label="Requests"]').textContent()).to.equal('2');

      await group.click();
      await heading('Session');
      await page.getByTestId('session-requests-table').locator('tbody tr').first().waitFor();
      expect(await page.getByTestId('session-requests').textContent()).to.equal('2');
      expect(await page.getByTestId('session-requests-table').locator('tbody tr').count()).to.equal(2);
      expect(await page.getByRole('heading', { level: 1 }).locator('..').textContent()).to.include('Playground: every visit');
      expect(problems.all()).to.deep.equal([]);
    });
  });
}
