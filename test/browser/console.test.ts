/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against a gateway
 * with an in-memory store and a fake upstream: the whole journey of a new user (sign up, Add Token,
 * copy the key, top up, call the gateway with the `openai` SDK, see the request in Usage), errors
 * beside their fields, the admin pages, keyboard-only use, a phone-sized screen, names that look
 * like HTML, and a clean browser console throughout. Each test leaves a screenshot in test-results/.
 * Without Chromium the suite skips itself and says why.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hashRedemptionCode } from '../../src/billing/redemption';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import {
  createLoginAccount,
  createRedemptionCode,
  newContext,
  saveScreenshot,
  startConsoleRig,
  stopConsoleRig,
  waitFor,
  watchPage,
  type PageElement,
  type PageGlobals,
  type PageProblems,
} from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const XSS_NAME = '<img src=x onerror=alert(1)>';

describe('browser: console', function () {
  this.timeout(60_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  let context: BrowserContext | null = null;
  let page: Page;
  let problems: PageProblems;
  let users = 0;

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'console'));
  });

  after(async () => {
    await stopConsoleRig({ browser, fake, tg });
  });

  afterEach(async function () {
    if (context === null) return;
    const title = this.currentTest?.fullTitle() ?? 'browser-test';
    await saveScreenshot(page, title).catch(() => undefined);
    await context.close();
    context = null;
  });

  /** A new browser profile at the given size, with a page that records what goes wrong in it. */
  async function openPage(viewport?: { width: number; height: number }): Promise<Page> {
    context = await newContext(browser, viewport);
    page = await context.newPage();
    problems = await watchPage(page);
    return page;
  }

  function url(path: string): string {
    return `${tg.url}${path}`;
  }

  /** A user account with a password, named `<stem>-<n>` so tests never collide. */
  async function newUser(stem: string, role: 'user' | 'admin' = 'user') {
    users += 1;
    return createLoginAccount(tg.store, `${stem}-${users}`, PASSWORD, role);
  }

  async function heading(text: string): Promise<void> {
    await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
  }

  async function logIn(name: string, password = PASSWORD): Promise<void> {
    await page.goto(url('/console'));
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await heading('Dashboard');
  }

  async function goTo(link: string, title = link): Promise<void> {
    // On a phone the links are behind the Menu button.
    const menu = page.getByTestId('nav-toggle');
    if (await menu.isVisible()) await menu.click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
    await heading(title);
  }

  async function goToAdmin(link: string, title = link): Promise<void> {
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('button', { name: 'Admin' }).click();
    await nav.getByRole('link', { name: link, exact: true }).click();
    await heading(title);
  }

  /** The key form of the Tokens page, opened with Add Token. */
  async function openAddToken(): Promise<void> {
    await page.getByRole('button', { name: 'Add Token' }).click();
    await page.getByRole('button', { name: 'Create token' }).waitFor();
  }

  /** Text of each cell of the table's rows, row by row. */
  function tableRows(testId: string): Promise<string[][]> {
    return page.getByTestId(testId).locator('tbody tr').evaluateAll((rows) =>
      rows.map((row) => [...row.querySelectorAll('td')].map((cell) => (cell.textContent ?? '').trim())));
  }

  function expectCleanConsole(): void {
    expect(problems.all(), 'console errors, page errors, CSP violations or dialogs').to.deep.equal([]);
  }

  it('takes a new user from sign-up to a working, funded key whose request shows in Usage', async () => {
    const code = await createRedemptionCode(tg.store, '5');
    await openPage();
    const started = process.hrtime.bigint();

    // Sign up.
    await page.goto(url('/console/signup'));
    await heading('Create an account');
    await page.getByLabel('Name', { exact: true }).fill('journey-user');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await heading('Dashboard');
    const account = await tg.store.findAccountByName('journey-user');
    expect(account, 'the signed-up account').to.not.equal(null);
    expect(await page.getByTestId('balance').textContent()).to.equal('$0.00');

    // Tokens → Add Token → Create token → Copy.
    await goTo('Tokens');
    await openAddToken();
    await page.getByLabel('Name', { exact: true }).fill('laptop');
    await page.getByRole('button', { name: 'Create token' }).click();
    const secretInput = page.getByTestId('new-key-secret');
    await secretInput.waitFor();
    const secret = await secretInput.inputValue();
    expect(secret).to.match(/^sk-/);
    await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.writeText('clipboard before Copy'));
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    const copied = await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.readText());
    expect(copied, 'the clipboard after Copy').to.equal(secret);
    expect(copied.startsWith('sk-')).to.equal(true);

    // Top Up with a redemption code; the dashboard shows the balance.
    await goTo('Top Up');
    await page.getByLabel('Redemption code').fill(code);
    await page.getByRole('button', { name: 'Redeem', exact: true }).click();
    await page.getByText('Redeemed $5.00. Your balance is now $5.00.').waitFor();
    // The credits table reloads after the redemption: wait for its row rather than count too early.
    await page.getByTestId('credit-table').locator('tbody tr').first().waitFor();
    expect(await page.getByTestId('credit-table').locator('tbody tr').count()).to.equal(1);
    await goTo('Dashboard');
    await page.getByTestId('balance').filter({ hasText: '$5.00' }).waitFor();
    expect(await page.getByTestId('balance').textContent()).to.equal('$5.00');

    // The copied key works through the openai SDK on a priced model.
    fake.enqueue(chatCompletion({ text: 'Hello from the fake upstream.', inputTokens: 1200, outputTokens: 300 }));
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: copied, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'Hello?' }] });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`      journey: no account to a working key and a funded balance in ${seconds.toFixed(2)} s`);
    expect(completion.choices[0]?.message.content).to.equal('Hello from the fake upstream.');

    // Usage: one row, with the model, its cost (1,200 × 2 + 300 × 8 per 1M = 0.0048) and where the counts came from.
    const charges = await waitFor(() => tg.store.listCharges({ accountId: account!.id }), (list) => list.length > 0);
    expect(charges, 'charges recorded for the account').to.have.length(1);
    await goTo('Usage');
    await page.getByTestId('usage-table').waitFor();
    // The few columns that matter show first; the token counts and the service are behind the chooser.
    await page.getByTestId('column-chooser').locator('summary').click();
    for (const column of ['Usage source', 'Service', 'Input', 'Output']) await page.getByTestId('column-chooser').getByLabel(column, { exact: true }).check();
    const rows = await tableRows('usage-table');
    expect(rows, 'usage rows').to.have.length(1);
    const headers = await page.getByTestId('usage-table').locator('thead th').allTextContents();
    const cell = (row: string[], column: string) => row[headers.indexOf(column)];
    expect(cell(rows[0], 'Model')).to.equal('gpt-priced');
    expect(cell(rows[0], 'Token')).to.equal('laptop');
    // Under a cent it says so, never $0.00; the exact figure is on hover.
    expect(cell(rows[0], 'Cost')).to.equal('< $0.01');
    expect(await page.getByTestId('usage-table').locator('tbody tr td.numeric .money').first().getAttribute('title')).to.equal('0.0048');
    expect(cell(rows[0], 'Usage source')).to.equal('upstream');
    // The tier the reply reported (the fake's chat completions say "default"); no long-context badge.
    expect(cell(rows[0], 'Service')).to.equal('default');
    expect(cell(rows[0], 'Input')).to.equal('1,200');
    expect(cell(rows[0], 'Output')).to.equal('300');
    await goTo('Dashboard');
    await page.locator('[data-testid="balance"][title="4.9952"]').waitFor();
    expect(await page.getByTestId('balance').textContent()).to.equal('$5.00');

    // After a reload the Tokens page knows the key by prefix and last four only.
    await page.goto(url('/console/token'));
    await heading('Tokens');
    await page.getByTestId('key-table').waitFor();
    const masks = await page.getByTestId('key-table').locator('code.key-mask').allTextContents();
    expect(masks).to.have.length(1);
    const [, prefix, last4] = /^(sk-\S+)…(\S{4})$/.exec(masks[0]) ?? [];
    expect(prefix, `mask ${masks[0]}`).to.be.a('string');
    expect(secret.startsWith(prefix) && secret.endsWith(last4), `${masks[0]} masks the secret`).to.equal(true);
    expect(prefix.length + last4.length).to.be.lessThan(secret.length);
    expect((await tableRows('key-table'))[0]?.[3], 'spent / limit').to.equal('< $0.01 / no limit');
    expect(await page.content(), 'the page source').to.not.include(secret);
    expect(await page.locator('body').innerText(), 'the page text').to.not.include(secret);
    const inputValues = await page.locator('input').evaluateAll((inputs) => inputs.map((input) => (input as PageElement).value ?? ''));
    expect(inputValues.join('\n')).to.not.include(secret);

    expectCleanConsole();
  });

  it('shows a wrong password beside the log-in form, with aria-invalid', async () => {
    const user = await newUser('wrong-password');
    await openPage();
    await page.goto(url('/console'));
    await page.getByLabel('Name or e-mail').fill(user.name);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Log in', exact: true }).click();

    const form = page.getByRole('form', { name: 'Log in' });
    const message = form.getByText('The name or password is wrong.');
    await message.waitFor();
    expect(await message.isVisible()).to.equal(true);
    const password = form.getByLabel('Password');
    expect(await password.getAttribute('aria-invalid')).to.equal('true');
    // The message is the field's description, so a screen reader reads it with the field.
    const messageId = await message.getAttribute('id');
    expect(messageId, 'the message has an id').to.be.a('string');
    expect((await password.getAttribute('aria-describedby'))?.split(' ')).to.include(messageId);
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.getAttribute('name'))).to.equal('password');
    // Still signed out.
    expect(await page.getByRole('heading', { level: 1, name: 'Dashboard' }).count()).to.equal(0);
    expectCleanConsole();
  });

  it('shows key form errors beside their field, from the browser and from the API', async () => {
    const user = await newUser('key-form');
    await openPage();
    problems.allowFailedRequest('/api/keys', 400);
    await logIn(user.name);
    await goTo('Tokens');
    await openAddToken();
    await page.getByLabel('Name', { exact: true }).fill('limited');
    const spendLimit = page.getByLabel('Spend limit');

    async function expectSpendLimitError(): Promise<string> {
      await page.locator('[name="spend_limit"][aria-invalid="true"]').waitFor();
      const errorId = await spendLimit.getAttribute('data-error-id');
      expect(errorId).to.be.a('string');
      const error = page.locator(`[id="${errorId}"]`);
      expect(await error.isVisible(), 'the message is visible').to.equal(true);
      const text = (await error.textContent()) ?? '';
      expect(text).to.not.equal('');
      expect((await spendLimit.getAttribute('aria-describedby'))?.split(' ')).to.include(errorId);
      // Beside the field: in the same .field block, right after the input.
      expect(await spendLimit.evaluate((input, id) => input.nextElementSibling?.id === id, errorId)).to.equal(true);
      expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.getAttribute('name'))).to.equal('spend_limit');
      return text;
    }

    // Not a number: caught in the browser.
    await spendLimit.fill('abc');
    await page.getByRole('button', { name: 'Create token' }).click();
    expect(await expectSpendLimitError()).to.equal('Enter an amount such as 5 or 2.50.');
    await saveScreenshot(page, 'browser console key form spend limit error');
    expect(await page.locator('.form-error').isVisible(), 'no form-wide error as well').to.equal(false);

    // A number the API refuses: its field error lands at the same place.
    await spendLimit.fill('0');
    await page.getByRole('button', { name: 'Create token' }).click();
    expect(await expectSpendLimitError()).to.equal('The spend limit must be more than 0.');
    expect(await tg.store.listKeys({ accountId: user.id }), 'no key created by refused forms').to.have.length(0);

    // Corrected, it goes through, and the limit is kept.
    await spendLimit.fill('2.5');
    expect(await spendLimit.getAttribute('aria-invalid'), 'editing clears the error').to.equal(null);
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('new-key-secret').waitFor();
    const keys = await tg.store.listKeys({ accountId: user.id });
    expect(keys).to.have.length(1);
    expect(keys[0].spendLimit).to.equal(2_500_000_000n);
    expectCleanConsole();
  });

  it('lets an admin generate codes, disable a user and see the breakers of the providers', async () => {
    const admin = await newUser('admin', 'admin');
    const victim = await newUser('victim');
    const victimKey = await tg.createKey({ accountId: victim.id, name: 'victim-key' });
    // Two failed attempts on the unreachable provider open its breaker (volume threshold 2).
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: tg.key, maxRetries: 0 });
    for (let i = 0; i < 2; i += 1) {
      await client.chat.completions.create({ model: 'gpt-broken', messages: [{ role: 'user', content: 'hi' }] }).then(
        () => expect.fail('gpt-broken should fail'),
        (error: unknown) => expect(error).to.be.instanceOf(OpenAI.APIError));
    }

    await openPage();
    await logIn(admin.name);

    // Codes: generate three worth 2.5 each; they are shown once and are the real codes.
    await goToAdmin('Codes', 'Redemption codes');
    await page.getByLabel('Number of codes').fill('3');
    await page.getByLabel('Amount per code').fill('2.5');
    await page.getByRole('button', { name: 'Generate codes' }).click();
    await page.getByTestId('new-codes-table').waitFor();
    const generated = await tableRows('new-codes-table');
    expect(generated).to.have.length(3);
    for (const row of generated) {
      expect(row[0]).to.match(/^tg-[A-Z2-7]{24}$/);
      expect(row[1]).to.equal('$2.50');
    }
    await page.getByTestId('codes-table').locator('tbody tr').nth(2).waitFor();
    expect(await page.getByTestId('codes-table').locator('tbody tr').count()).to.be.at.least(3);
    const redeemed = await tg.store.redeemCode(hashRedemptionCode(generated[0][0]), victim.id, null);
    expect(redeemed.ok, 'a generated code redeems').to.equal(true);
    // The victim's key works (and so sits in the gateway's key cache) before the account is disabled.
    const victimClient = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: victimKey.key, maxRetries: 0 });
    const victimRequest = { model: 'gpt-priced', messages: [{ role: 'user' as const, content: 'hi' }] };
    await victimClient.chat.completions.create(victimRequest);

    // Accounts: disable the victim, through the confirm step.
    await goToAdmin('Accounts');
    await page.getByTestId('accounts-table').waitFor();
    await page.getByRole('button', { name: `Disable ${victim.name}`, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Disable “${victim.name}”?` });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Disable account' }).click();
    await page.getByText(`Account “${victim.name}” disabled.`).waitFor();
    await page.getByRole('button', { name: `Enable ${victim.name}`, exact: true }).waitFor();
    const victimRow = (await tableRows('accounts-table')).find((row) => row[0] === victim.name);
    expect(victimRow?.[3]).to.equal('disabled');
    expect((await tg.store.findAccountByName(victim.name))?.disabled).to.equal(true);
    const refused = await victimClient.chat.completions.create(victimRequest).then(() => null, (error: unknown) => error);
    expect(refused, "a disabled account's key is refused").to.be.instanceOf(OpenAI.AuthenticationError);
    // The admin has no Disable button for themselves.
    expect(await page.getByRole('button', { name: `Disable ${admin.name}`, exact: true }).count()).to.equal(0);

    // Providers: the unreachable one is open, the healthy ones closed, the keyless one not configured.
    await goToAdmin('Providers');
    await page.getByTestId('providers-table').waitFor();
    const providers = new Map((await tableRows('providers-table')).map((row) => [row[0], row]));
    expect([...providers.keys()].sort()).to.deep.equal(['anthropic', 'broken', 'keyless', 'openai']);
    expect(providers.get('keyless')?.[2]).to.equal('not configured (no key)');
    expect(providers.get('broken')?.[2]).to.equal('open (failing over)');
    expect(providers.get('broken')?.[5]).to.equal('2');
    expect(providers.get('openai')?.[2]).to.equal('closed (healthy)');
    expect(providers.get('anthropic')?.[2]).to.equal('closed (healthy)');

    // Audit log: the disabling above, by this admin through the console, the account named beside its
    // id and the change in words; filtered by actor, action and target, with a CSV link.
    await goToAdmin('Audit log');
    await page.getByTestId('audit-table').waitFor();
    const victimId = (await tg.store.findAccountByName(victim.name))!.id;
    const disabled = (await tableRows('audit-table')).find((row) => row[3] === 'account.disable');
    expect(disabled?.slice(1, 3)).to.deep.equal([admin.name, 'console']);
    expect(disabled?.[4]).to.equal(`${victim.name} ${victimId}`);
    expect(disabled?.[5]).to.equal('disabled: false → truesessions_ended: — → 0');
    await page.getByLabel('Actor').fill(admin.name);
    await page.getByLabel('Action').selectOption('account.disable');
    await page.getByLabel('Target id (acc_…, key_…)').fill(victimId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    // The table is replaced once the filtered list has loaded.
    const matches = (rows: string[][]) => rows.length > 0 && rows.every((row) => row[1] === admin.name && row[3] === 'account.disable' && row[4] === disabled![4]);
    let filtered = await tableRows('audit-table');
    for (let tries = 0; tries < 100 && !matches(filtered); tries++) {
      await page.waitForTimeout(50);
      filtered = await tableRows('audit-table');
    }
    expect(matches(filtered), JSON.stringify(filtered)).to.equal(true);
    const csvHref = await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href');
    expect(csvHref).to.include('/api/admin/audit?').and.include('format=csv').and.include(`target=${victimId}`).and.include('action=account.disable');
    expectCleanConsole();
  });

  it('can be used with the keyboard alone: log in and reach Add Token with Tab and Enter', async () => {
    const user = await newUser('keyboard');
    await openPage();
    await page.goto(url('/console'));
    await heading('Log in');

    /** What has focus: "tag:accessible-ish name". */
    const focused = () => page.evaluate(() => {
      const { document } = globalThis as unknown as PageGlobals;
      const element = document.activeElement;
      if (!element || element === document.body) return 'body';
      const label = element.tagName === 'INPUT' ? element.labels?.[0]?.textContent : null;
      const name = element.getAttribute('aria-label') ?? label ?? element.textContent ?? '';
      return `${element.tagName.toLowerCase()}:${name.trim()}`;
    });
    /** Presses Tab until `target` has focus; fails after 40 presses. */
    async function tabTo(target: string): Promise<void> {
      const seen: string[] = [];
      for (let i = 0; i < 40; i += 1) {
        await page.keyboard.press('Tab');
        const now = await focused();
        if (now === target) return;
        seen.push(now);
      }
      expect.fail(`Tab never reached ${target}; it went through ${seen.join(' → ')}`);
    }

    await tabTo('input:Name or e-mail');
    await page.keyboard.type(user.name);
    await tabTo('input:Password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await heading('Dashboard');

    await tabTo('a:Tokens');
    await page.keyboard.press('Enter');
    await heading('Tokens');
    expect(await focused(), 'focus moves to the new page').to.equal('h1:Tokens');
    await tabTo('button:Add Token');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Create token' }).waitFor();
    expect(await focused(), 'the form opens with focus in its first field').to.equal('input:Name');

    // And on through the form: type a name, Enter creates the token, focus lands on the secret.
    await page.keyboard.type('keyboard-key');
    await page.keyboard.press('Enter');
    await page.getByTestId('new-key-secret').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.getAttribute('data-testid'))).to.equal('new-key-secret');
    await tabTo('button:Copy');
    await page.keyboard.press('Enter');
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.readText())).to.equal(await page.getByTestId('new-key-secret').inputValue());
    expectCleanConsole();
  });

  it('fits a 375×667 phone screen without sideways scrolling', async () => {
    const user = await newUser('phone');
    await tg.createKey({ accountId: user.id, name: 'a-rather-long-key-name-for-a-phone' });
    await openPage({ width: 375, height: 667 });
    await logIn(user.name);
    await page.getByTestId('balance').waitFor();
    await page.locator('.chart-block svg').waitFor();

    const overflow = async (where: string) => {
      const width = await page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth);
      expect(width, `scrollWidth on ${where}`).to.be.at.most(375);
    };
    await overflow('the dashboard');
    for (const [link, table] of [['Tokens', 'key-table'], ['Usage', 'usage-table'], ['Top Up', 'credit-table']] as const) {
      await goTo(link);
      await page.getByTestId(table).waitFor();
      await overflow(link);
    }
    await goTo('Dashboard');
    await page.getByTestId('balance').waitFor();
    expectCleanConsole();
  });

  it('shows a key named like HTML as text, never as markup', async () => {
    const user = await newUser('xss');
    const funded = await tg.store.redeemCode(hashRedemptionCode(await createRedemptionCode(tg.store, '1')), user.id, null);
    expect(funded.ok).to.equal(true);
    await openPage();
    await logIn(user.name);
    await goTo('Tokens');
    await openAddToken();
    await page.getByLabel('Name', { exact: true }).fill(XSS_NAME);
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('new-key-secret').waitFor();
    const secret = await page.getByTestId('new-key-secret').inputValue();
    await page.getByRole('heading', { level: 2, name: `Token “${XSS_NAME}” created` }).waitFor();
    await page.getByTestId('key-table').locator('tbody tr').first().waitFor();
    expect((await tableRows('key-table'))[0]?.[0]).to.equal(XSS_NAME);
    expect((await tg.store.listKeys({ accountId: user.id }))[0]?.name).to.equal(XSS_NAME);

    // Usage shows the name too: in its filter and beside a request made with the key.
    await new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: secret, maxRetries: 0 })
      .chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => tg.store.listCharges({ accountId: user.id }), (list) => list.length > 0);
    await goTo('Usage');
    await page.getByRole('option', { name: `${XSS_NAME} (` }).waitFor({ state: 'attached' });
    await page.getByTestId('usage-table').locator('tbody tr').first().waitFor();
    expect((await tableRows('usage-table'))[0]?.[1]).to.equal(XSS_NAME);

    // And from a fresh load of the Tokens page.
    await page.goto(url('/console/token'));
    await heading('Tokens');
    await page.getByTestId('key-table').locator('tbody tr').first().waitFor();
    expect((await tableRows('key-table'))[0]?.[0]).to.equal(XSS_NAME);
    expect(await page.getByRole('button', { name: `Revoke ${XSS_NAME}`, exact: true }).count()).to.equal(1);

    // An onerror handler would have run by now: a broken image fails at once.
    await page.waitForTimeout(200);
    expect(await page.locator('img').count(), 'img elements on the page').to.equal(0);
    expect(problems.dialogs, 'dialogs opened').to.deep.equal([]);
    expectCleanConsole();
  });
});
