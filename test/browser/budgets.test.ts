/**
 * Budgets in the console (Chromium through playwright-core): the dashboard shows each budget's spend
 * this period as a bar with its reset time, the banner for an alert of the current period and the alert
 * history; the Tokens page shows the bars too. The figures are the ledger's.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { chromiumProblem, consoleYaml, createLoginAccount, launchChromium, newContext, waitFor, watchPage, type PageProblems } from './browser-helpers';

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

  before(async function () {
    const problem = chromiumProblem();
    if (problem !== null) {
      console.log(`      ${problem}: browser budgets suite skipped`);
      this.skip();
    }
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    browser = await launchChromium();
    const bea = await createLoginAccount(tg.store, 'bea', PASSWORD);
    await tg.store.credit({ accountId: bea.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    await tg.store.setAccountBudget(bea.id, { amount: 200_000_000_000n, period: 'month', timezone: 'Europe/Berlin' });
    const { key, id } = await tg.createKey({ accountId: bea.id, name: 'ci' });
    keyId = id;
    // A budget the one answer below takes past 80% (the alert fires) and a hold can still fit.
    await tg.store.setKeyLimits(id, { budget: { amount: 1_000_000n, period: 'day', timezone: 'UTC' } });
    fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 150, model: 'gpt-priced' }));
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'gpt-priced', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.clone().text()).to.equal(200);
    await res.arrayBuffer();
    const [charge] = await waitFor(() => tg.store.listCharges({ keyId: id }), (charges) => charges.length === 1);
    const fired = charge.cost >= 1_000_000n ? 2 : 1;
    await waitFor(() => tg.store.listAlerts({ accountId: bea.id }), (alerts) => alerts.length === fired);
  });

  after(async () => {
    await context?.close();
    await browser?.close();
    await tg?.stop();
    await fake?.close();
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

  async function logIn(): Promise<void> {
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill('bea');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard', exact: true }).waitFor();
  }

  it('shows each budget as a bar with its spend and reset time, the banner and the alert history on the dashboard', async () => {
    await logIn();
    const [charge] = await tg.store.listCharges({ keyId });
    const keyBar = page.getByTestId(`budget-key-${keyId}`);
    await keyBar.waitFor();
    const percent = Number((charge.cost * 1000n) / 1_000_000n) / 10;
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
});
