/**
 * Budgets in the console (Chromium through playwright-core): the dashboard shows each budget's spend
 * this period as a bar with its reset time, the banner for an alert of the current period and the alert
 * history; the Tokens page shows the bars too. The figures are the ledger's. A key's owner sets and
 * removes its budget on the Tokens page, an administrator an account's on the accounts page.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, startConsoleRig, stopConsoleRig, waitFor, watchPage, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

describe('browser: budgets and alerts', function () {
  this.timeout(90_000);
  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  let context: BrowserContext | null = null;
  let page: Page;
  let problems: PageProblems;
  let keyId: string;
  let beaId: string;

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'budgets'));
    const bea = await createLoginAccount(tg.store, 'bea', PASSWORD);
    beaId = bea.id;
    await tg.store.credit({ accountId: bea.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    await tg.store.setAccountBudget(bea.id, { amount: 200_000_000_000n, period: 'month', timezone: 'Europe/Berlin' });
    const { key, id } = await tg.createKey({ accountId: bea.id, name: 'ci' });
    keyId = id;
    // A budget the one answer below takes past 80% (the alert fires) and a hold can still fit.
    await tg.store.setKeyLimits(id, { budget: { amount: 1_050_000n, period: 'day', timezone: 'UTC' } });
    fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 150, model: 'gpt-priced' }));
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'gpt-priced', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.clone().text()).to.equal(200);
    await res.arrayBuffer();
    const [charge] = await waitFor(() => tg.store.listCharges({ keyId: id }), (charges) => charges.length === 1);
    const fired = charge.cost >= 1_050_000n ? 2 : 1;
    await waitFor(() => tg.store.listAlerts({ accountId: bea.id }), (alerts) => alerts.length === fired);
  });

  after(async () => {
    await context?.close();
    await stopConsoleRig({ browser, fake, tg });
  });

  beforeEach(async () => {
    context = await newContext(browser);
    page = await context.newPage();
    problems = await watchPage(page);
  });

  afterEach(async () => {
    expect(problems.all(), 'console errors, CSP violations or failed requests').to.deep.equal([]);
    await context?.close();
    context = null;
  });

  async function logIn(name = 'bea'): Promise<void> {
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard', exact: true }).waitFor();
  }

  it('shows each budget as a bar with its spend and reset time, the banner and the alert history on the dashboard', async () => {
    await logIn();
    const [charge] = await tg.store.listCharges({ keyId });
    const keyBar = page.getByTestId(`budget-key-${keyId}`);
    await keyBar.waitFor();
    const percent = Number((charge.cost * 1000n) / 1_050_000n) / 10;
    expect(percent).to.be.at.least(80);
    expect(await keyBar.getByRole('progressbar').getAttribute('aria-valuenow')).to.equal(String(Math.min(100, Math.round(percent))));
    expect(await keyBar.textContent()).to.include('Key ci: daily budget of').and.include('(UTC)').and.include(`(${percent.toFixed(1)}%)`).and.include('resets');
    expect(await page.getByTestId('budget-banner').textContent()).to.include('A key reached 80% of its daily budget');
    // 80% fired, and 100% too if the answer took the spend that far.
    expect(await page.getByTestId('alert-history').locator('tbody tr').count()).to.equal(percent >= 100 ? 2 : 1);
    expect(await page.getByText('Account: monthly budget of').textContent()).to.include('(Europe/Berlin)');
  });

  it('shows the bars on the Tokens page', async () => {
    await logIn();
    await page.goto(`${tg.url}/console/token`);
    await page.getByRole('heading', { level: 1, name: 'Tokens', exact: true }).waitFor();
    await page.getByTestId(`budget-key-${keyId}`).waitFor();
    expect(await page.getByTestId('alert-history').count()).to.equal(0);
  });

  /** Fills the budget form the button opened and saves it; an empty amount removes the budget. */
  async function saveBudget(amount: string, period?: string, timezone?: string): Promise<void> {
    const form = page.locator('form').filter({ has: page.getByRole('button', { name: 'Save budget' }) });
    await form.getByLabel('Amount', { exact: true }).fill(amount);
    if (period !== undefined) await form.getByLabel('Period').selectOption(period);
    if (timezone !== undefined) await form.getByLabel('Time zone').fill(timezone);
    await form.getByRole('button', { name: 'Save budget' }).click();
    await form.waitFor({ state: 'detached' });
  }

  async function apiGetJson<T>(path: string): Promise<T> {
    const res = await page.request.get(`${tg.url}${path}`);
    expect(res.status(), await res.text()).to.equal(200);
    return (await res.json()) as T;
  }

  it('sets and removes a key budget on the Tokens page and an account budget on the accounts page', async () => {
    const { id: spareId } = await tg.createKey({ accountId: beaId, name: 'spare' });
    await logIn();
    await page.goto(`${tg.url}/console/token`);
    await page.getByRole('heading', { level: 1, name: 'Tokens', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Budget for spare' }).click();
    expect(await page.getByLabel('Time zone').inputValue(), 'the time zone defaults to UTC').to.equal('UTC');
    await saveBudget('3', 'week', 'Europe/Berlin');
    expect(await page.getByText('Budget of “spare” saved.').count()).to.equal(1);
    const keyBudget = async () => (await apiGetJson<{ keys: Array<{ id: string; budget: unknown }> }>('/api/keys')).keys.find((key) => key.id === spareId)?.budget;
    expect(await keyBudget()).to.deep.equal({ amount: '3', period: 'week', timezone: 'Europe/Berlin' });
    const bar = page.getByTestId(`budget-key-${spareId}`);
    await bar.waitFor();
    expect(await bar.textContent()).to.include('Key spare: weekly budget of').and.include('(Europe/Berlin)');

    await page.getByRole('button', { name: 'Budget for spare' }).click();
    expect(await page.getByLabel('Amount', { exact: true }).inputValue(), 'the form shows the budget set').to.equal('3');
    await saveBudget('');
    expect(await page.getByText('Budget of “spare” removed.').count()).to.equal(1);
    expect(await keyBudget()).to.equal(null);
    await bar.waitFor({ state: 'detached' });

    const cara = await createLoginAccount(tg.store, 'cara', PASSWORD);
    await createLoginAccount(tg.store, 'ada', PASSWORD, 'admin');
    await context!.clearCookies();
    await logIn('ada');
    await page.goto(`${tg.url}/console/admin/accounts`);
    await page.getByRole('heading', { level: 1, name: 'Accounts', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Budget for cara' }).click();
    await saveBudget('50', 'day');
    const accountBudget = async () => (await apiGetJson<{ accounts: Array<{ id: string; budget: unknown }> }>('/api/admin/accounts')).accounts.find((account) => account.id === cara.id)?.budget;
    expect(await accountBudget()).to.deep.equal({ amount: '50', period: 'day', timezone: 'UTC' });
    const row = page.getByTestId('accounts-table').locator('tr', { hasText: 'cara' });
    await row.getByText('(UTC)').waitFor();

    await context!.clearCookies();
    await logIn('cara');
    expect(await page.getByTestId(`budget-account-${cara.id}`).textContent()).to.include('Account: daily budget of').and.include('(UTC)');

    await context!.clearCookies();
    await logIn('ada');
    await page.goto(`${tg.url}/console/admin/accounts`);
    await page.getByRole('button', { name: 'Budget for cara' }).click();
    await saveBudget('');
    expect(await accountBudget()).to.equal(null);
    await row.getByText('Role default').waitFor();
  });
});
