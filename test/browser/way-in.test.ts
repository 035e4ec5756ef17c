/**
 * A way in, in Chromium at a laptop's and a phone's width: an empty dashboard shows the three steps
 * (top up, create a key, first call); after Add Token the base URLs and snippets for curl, the
 * OpenAI and Anthropic SDKs, Claude Code and Codex are there, and the curl snippet, copied with its
 * Copy button and run as it is, gets an answer through the gateway; the low-balance banner shows the
 * balance as it is now with a Top up link, and goes once the balance is back above the threshold; a
 * Playground turn refused for the balance links to Top Up and ends "Sending…" and "Cost: settling…".
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { Account } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor, watchPage, type PageGlobals, type PageProblems } from './browser-helpers';

const run = promisify(execFile);
const PASSWORD = 'correct-horse-battery';
/** alerts.low_balance of the test gateway. */
const LOW_BALANCE = '5';

for (const viewport of [{ width: 1366, height: 900 }, { width: 390, height: 844 }]) {
  describe(`browser: a way in, at ${viewport.width} px`, function () {
    this.timeout(60_000);
    let browser: Browser;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let context: BrowserContext | null = null;
    let page: Page;
    let problems: PageProblems;

    before(async function () {
      ({ browser, fake, tg } = await startConsoleRig(this, 'way in', { lowBalance: LOW_BALANCE }));
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
      if (this.currentTest?.state === 'failed') await saveScreenshot(page, `way-in-${viewport.width}-${this.currentTest.title}`);
      await context?.close();
      context = null;
    });

    async function heading(text: string): Promise<void> {
      await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
    }

    async function logIn(name: string): Promise<void> {
      await page.goto(`${tg.url}/console`);
      await page.getByLabel('Name or e-mail').fill(name);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await heading('Dashboard');
    }

    async function credit(account: Account, amount: string): Promise<void> {
      await tg.store.credit({ accountId: account.id, amount: unitsToNano(amount), kind: 'admin', actor: 'test', note: null });
    }

    it('shows an empty dashboard three steps, then after Add Token snippets whose curl answers when run', async () => {
      const name = `nina-${viewport.width}`;
      const nina = await createLoginAccount(tg.store, name, PASSWORD);
      await logIn(name);
      const steps = page.getByTestId('first-steps').getByTestId('first-step');
      await steps.first().waitFor();
      expect(await steps.count()).to.equal(3);
      expect(await steps.locator('.badge').count(), 'none done yet').to.equal(0);
      const links = await steps.locator('a').evaluateAll((anchors) => anchors.map((anchor) => anchor.getAttribute('href')));
      expect(links).to.deep.equal(['/console/topup', '/console/token', '/console/token']);

      await credit(nina, '10');
      await page.goto(`${tg.url}/console/token`);
      await heading('Tokens');
      await page.getByRole('button', { name: 'Add Token' }).click();
      await page.getByLabel('Name', { exact: true }).fill('laptop');
      await page.getByRole('button', { name: 'Create token' }).click();
      const secret = await page.getByTestId('new-key-secret').inputValue();
      expect(secret).to.match(/^sk-/);
      expect(await page.getByTestId('base-url-openai').textContent()).to.equal(`${tg.url}/v1`);
      expect(await page.getByTestId('base-url-anthropic').textContent()).to.equal(tg.url);
      const claudeCode = await page.getByTestId('snippet-claude-code').textContent();
      expect(claudeCode).to.include(`export ANTHROPIC_BASE_URL=${tg.url}\n`).and.include(`export ANTHROPIC_AUTH_TOKEN=${secret}\n`);
      const codex = await page.getByTestId('snippet-codex').textContent();
      expect(codex).to.include(`base_url = "${tg.url}/v1"`).and.include('wire_api = "responses"').and.include(`TOLLGATE_API_KEY=${secret}`);
      expect(await page.getByTestId('snippet-openai').textContent()).to.include(`OpenAI(base_url="${tg.url}/v1", api_key="${secret}")`);
      expect(await page.getByTestId('snippet-anthropic').textContent()).to.include(`Anthropic(base_url="${tg.url}", api_key="${secret}")`);
      // Long lines scroll inside their snippet, never the page.
      expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth)).to.be.at.most(viewport.width);

      // Copy the curl snippet as a person would, and paste it into a shell.
      await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.writeText('clipboard before Copy'));
      await page.getByTestId('copy-curl').click();
      await page.getByTestId('connect').getByText('Copied to the clipboard.').waitFor();
      const pasted = await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.readText());
      expect(pasted).to.equal(await page.getByTestId('snippet-curl').textContent());
      fake.enqueue(chatCompletion({ text: 'Hello from curl.', inputTokens: 12, outputTokens: 4, model: 'gpt-priced' }));
      const { stdout } = await run('sh', ['-c', pasted], { timeout: 20_000 });
      const answer = JSON.parse(stdout) as { choices: { message: { content: string } }[] };
      expect(answer.choices[0]?.message.content).to.equal('Hello from curl.');
      const charges = await waitFor(() => tg.store.listCharges({ accountId: nina.id }), (list) => list.length === 1);
      expect(charges.map((charge) => charge.model)).to.deep.equal(['gpt-priced']);

      // All three steps done: the dashboard no longer shows them.
      await page.goto(`${tg.url}/console`);
      await heading('Dashboard');
      await page.getByTestId('balance').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await page.getByTestId('first-steps').count()).to.equal(0);
      expect(problems.all()).to.deep.equal([]);
    });

    it('shows the balance as it is now in the low-balance banner, with a Top up link', async () => {
      const name = `lola-${viewport.width}`;
      const lola = await createLoginAccount(tg.store, name, PASSWORD);
      await credit(lola, '1');
      const key = await tg.createKey({ accountId: lola.id, name: 'ci' });
      fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 10, model: 'gpt-priced' }));
      const res = await fetch(`${tg.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
        body: JSON.stringify({ model: 'gpt-priced', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).to.equal(200);
      await res.arrayBuffer();
      await waitFor(() => tg.store.listAlerts({ accountId: lola.id }), (alerts) => alerts.some((alert) => alert.kind === 'balance'));
      // A credit since the alert, still under the threshold: the banner says what the balance is now.
      await credit(lola, '2');
      const now = (await tg.store.balance(lola.id)).balance;
      await logIn(name);
      const low = page.getByTestId('budget-banner').getByTestId('low-balance');
      await low.waitFor();
      const dollars = (Number(now) / 1e9).toFixed(2);
      expect(await low.textContent()).to.equal(`Your balance is $${dollars}, below the alert threshold of $5.00; paid requests are refused once it cannot cover them. Top up`);
      expect(await low.getByRole('link', { name: 'Top up' }).getAttribute('href')).to.equal('/console/topup');

      // Topped up above the threshold: the banner is gone.
      await credit(lola, '10');
      await page.reload();
      await heading('Dashboard');
      await page.getByTestId('budgets').locator('*').first().waitFor({ state: 'attached' }).catch(() => undefined);
      await page.waitForLoadState('networkidle');
      expect(await page.getByTestId('low-balance').count()).to.equal(0);
      expect(problems.all()).to.deep.equal([]);
    });

    it('links a Playground turn refused for the balance to Top Up, and ends its pending state', async () => {
      const name = `pia-${viewport.width}`;
      await createLoginAccount(tg.store, name, PASSWORD);
      await logIn(name);
      await page.goto(`${tg.url}/console/playground`);
      await heading('Playground');
      problems.allowFailedRequest('/v1/chat/completions', 402);
      await page.getByLabel('Message').fill('Say hello.');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      const topUp = page.getByTestId('playground-topup');
      await topUp.waitFor();
      expect(await topUp.getAttribute('href')).to.equal('/console/topup');
      // The failed turn ends its pending state: nothing is left "Sending…" or "settling…".
      await page.getByTestId('playground-cost').filter({ hasText: 'Cost: none, the request was not answered.' }).waitFor({ timeout: 3000 });
      const sending = page.getByRole('form', { name: 'Playground' }).getByRole('status');
      expect(await waitFor(() => sending.textContent(), (text) => text === '', 3000)).to.equal('');
      expect(problems.all()).to.deep.equal([]);
    });
  });
}
