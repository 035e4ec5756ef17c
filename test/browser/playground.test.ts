/**
 * The Playground in Chromium at a laptop's and a phone's width: its own key is left out of Tokens
 * (behind a "show" toggle); its turns show in Sessions as one "Playground" row, not a row per visit;
 * "View code" shows the request as curl and SDK snippets, and the curl one, run as it is with a real
 * key, gets an answer through the gateway.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { Account } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor, watchPage, type PageGlobals, type PageProblems } from './browser-helpers';

const run = promisify(execFile);
const PASSWORD = 'correct-horse-battery';

/** The JSON body of a curl snippet: its -d argument, single-quoted for the shell. */
function curlBody(snippet: string): unknown {
  const quoted = snippet.slice(snippet.indexOf("-d '") + 3).trimEnd();
  return JSON.parse(quoted.slice(1, -1).replace(/'\\''/g, "'"));
}

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

    it('"View code" shows the request it sent as curl and SDK snippets, and the curl one answers when run', async () => {
      const account = await signedIn(`vic-${viewport.width}`);
      await openPlayground();
      await page.getByLabel('System prompt (optional)').fill("Answer in one word; it's a test.");
      const sent = page.waitForRequest((request) => request.url().endsWith('/v1/chat/completions') && request.method() === 'POST');
      await playgroundTurn("What's the word?", 'Word.');
      const posted = JSON.parse((await sent).postData() ?? 'null') as Record<string, unknown>;

      await page.getByRole('button', { name: 'View code' }).click();
      const curl = page.getByTestId('snippet-playground-curl');
      await curl.waitFor();
      expect(await page.getByTestId('playground-code-what').textContent()).to.include('The last request sent to gpt-priced.');
      const text = (await curl.textContent())!;
      expect(text).to.include(`curl -sS -N --fail-with-body ${tg.url}/v1/chat/completions`).and.include('"Authorization: Bearer $TOLLGATE_API_KEY"');
      // Exactly what the Playground posted: system prompt, message, settings, streamed with usage.
      expect(curlBody(text)).to.deep.equal(posted);
      expect(posted).to.deep.include({ model: 'gpt-priced', stream: true });
      expect(await page.getByTestId('snippet-playground-openai').textContent()).to.include(`OpenAI(base_url="${tg.url}/v1", api_key=os.environ["TOLLGATE_API_KEY"])`)
        .and.include(`"content": "Answer in one word; it's a test."`);
      expect(await page.getByTestId('snippet-playground-anthropic').count(), 'gpt-priced is not an Anthropic model').to.equal(0);
      // Long lines scroll inside their snippet, never the page.
      expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth)).to.be.at.most(viewport.width);

      // Copied with its button and pasted into a shell that holds a real key of the account.
      await page.getByTestId('copy-playground-curl').click();
      await page.getByTestId('playground-code').getByText('Copied to the clipboard.').waitFor();
      const pasted = await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.readText());
      expect(pasted).to.equal(text);
      const key = await tg.createKey({ accountId: account.id, name: 'shell' });
      fake.enqueue(chatStream({ inputTokens: 20, outputTokens: 5, model: 'gpt-priced', text: 'Pasted.', includeUsage: true }));
      const { stdout } = await run('sh', ['-c', pasted], { timeout: 20_000, env: { ...process.env, TOLLGATE_API_KEY: key.key } });
      expect(stdout).to.include('data: [DONE]');
      const charges = await waitFor(() => tg.store.listCharges({ keyId: key.id }), (list) => list.length === 1);
      expect(charges.map((charge) => charge.status), 'the pasted call answered 200').to.deep.equal([200]);
      expect(charges[0].origin ?? null, 'a pasted call is not the Playground\'s').to.equal(null);

      // With the Playground's key filled in, it runs as it is.
      await page.getByLabel("Fill in the Playground's key").check();
      await curl.filter({ hasNotText: '$TOLLGATE_API_KEY' }).waitFor();
      const filled = (await curl.textContent())!;
      expect(filled).to.match(/'Authorization: Bearer sk-[A-Za-z0-9]+'/);
      fake.enqueue(chatStream({ inputTokens: 20, outputTokens: 5, model: 'gpt-priced', text: 'Filled.', includeUsage: true }));
      expect((await run('sh', ['-c', filled], { timeout: 20_000 })).stdout).to.include('data: [DONE]');

      // The next message typed, to an Anthropic model: an Anthropic SDK snippet too, its system prompt beside the messages.
      await page.getByLabel('Model', { exact: true }).selectOption('claude-priced');
      await page.getByLabel('Message').fill('And you?');
      const anthropic = page.getByTestId('snippet-playground-anthropic');
      await anthropic.waitFor();
      expect(await page.getByTestId('playground-code-what').textContent()).to.include('The request the next Send makes to claude-priced.');
      expect(await anthropic.textContent()).to.match(/anthropic\.Anthropic\(base_url="[^"]+", api_key="sk-[A-Za-z0-9]+"\)/)
        .and.include(`system="Answer in one word; it's a test."`).and.include('"content": "And you?"');
      expect(curlBody((await curl.textContent())!)).to.deep.include({ model: 'claude-priced', messages: [{ role: 'system', content: "Answer in one word; it's a test." }, { role: 'user', content: 'And you?' }] });
      expect(problems.all()).to.deep.equal([]);
    });
  });
}
