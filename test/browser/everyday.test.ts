/**
 * The console's everyday surface in Chromium at a laptop's width (1366 × 900) and a phone's
 * (390 × 844): refused requests show in Usage with their reason and in Analytics by reason, a budget
 * that refused a request reads "blocked until …", Usage's total is the sum over all its pages, tables
 * put the columns that matter first (the rest behind a chooser that is remembered), and no page
 * scrolls sideways on the phone, whose navigation folds behind a Menu button.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor, watchPage, type PageGlobals, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const LAPTOP = { width: 1366, height: 900 } as const;
const PHONE = { width: 390, height: 844 } as const;
/** Charges made straight in the ledger: more than one page of Usage (100 rows). */
const STORED_CHARGES = 130;

const PAGES = [
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
  ['/console/admin/accounts', 'Accounts'],
  ['/console/members', 'Organisations'],
  ['/console/admin/orgs', 'Organisations'],
  ['/console/admin/codes', 'Redemption codes'],
  ['/console/admin/payments', 'Payments'],
  ['/console/admin/providers', 'Providers'],
  ['/console/admin/audit', 'Audit log'],
  ['/console/admin/gateway', 'Gateway totals'],
] as const;

async function post(url: string, key: string, model: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

for (const viewport of [LAPTOP, PHONE]) {
  describe(`browser: the everyday console at ${viewport.width} px`, function () {
    this.timeout(120_000);
    let browser: Browser;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let context: BrowserContext | null = null;
    let page: Page;
    let problems: PageProblems;
    let ciKey: string;
    const name = `ada-${viewport.width}`;

    before(async function () {
      ({ browser, fake, tg } = await startConsoleRig(this, 'everyday'));
      const ada = await createLoginAccount(tg.store, name, PASSWORD, 'admin');
      await tg.store.credit({ accountId: ada.id, amount: unitsToNano('20'), kind: 'admin', actor: 'test', note: null });
      const ci = await tg.createKey({ accountId: ada.id, name: 'ci' });
      ciKey = ci.id;
      // A budget one answer nearly spends: the next request cannot be admitted.
      await tg.store.setKeyLimits(ci.id, { budget: { amount: 2_000_000n, period: 'month', timezone: 'UTC' } });
      fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 150, model: 'gpt-priced' }));
      expect(await post(tg.url, ci.key, 'gpt-priced')).to.equal(200);
      expect(await post(tg.url, ci.key, 'gpt-priced')).to.equal(402);
      expect(await post(tg.url, ci.key, 'no-such-model')).to.equal(404);
      expect(await post(tg.url, 'sk-not-a-key', 'gpt-priced')).to.equal(401);
      const laptop = await tg.createKey({ accountId: ada.id, name: 'laptop' });
      const t0 = Date.now() - 3_600_000;
      const charges: ChargeRecord[] = Array.from({ length: STORED_CHARGES }, (_, n) => ({
        ...PLAIN_CHARGE,
        requestId: `req_stored_${String(n).padStart(4, '0')}`,
        accountId: ada.id,
        keyId: laptop.id,
        model: n % 2 === 0 ? 'gpt-priced' : 'claude-priced',
        provider: 'openai',
        endpoint: 'chat',
        inputTokens: 10 + n,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        cacheReadTokens: 0,
        outputTokens: n,
        imageInputTokens: 0,
        imageOutputTokens: 0,
        images: 0,
        cost: BigInt(1_234_567 + n * 1_001),
        usageSource: 'upstream',
        status: 200,
        outcome: 'delivered',
        latencyMs: 100,
        createdAt: new Date(t0 + n * 1000),
      }));
      await tg.store.recordCharges(charges);
      await waitFor(() => tg.store.refusals.list({ limit: 10 }), (rows) => rows.length >= 3);
      await waitFor(() => tg.store.listAlerts({ accountId: ada.id }), (alerts) => alerts.some((alert) => alert.body.includes('"blocked":true')));
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
      if (this.currentTest?.state === 'failed' && page !== undefined) await saveScreenshot(page, `everyday-${viewport.width}-${this.currentTest.title}`);
      await context?.close();
      context = null;
    });

    async function heading(text: string): Promise<void> {
      await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
    }

    async function logIn(): Promise<void> {
      await page.goto(`${tg.url}/console`);
      await page.getByLabel('Name or e-mail').fill(name);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await heading('Dashboard');
    }

    async function scrollWidth(): Promise<number> {
      return page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth);
    }

    it('shows a refused request in Usage with its reason, at no cost, and the refusals by reason in Analytics', async () => {
      await logIn();
      await page.goto(`${tg.url}/console/usage?status=refused`);
      await heading('Usage');
      const refusals = page.getByTestId('usage-table').getByTestId('refusal');
      await refusals.first().waitFor();
      const texts = await refusals.allTextContents();
      expect(texts).to.have.length(2);
      expect(texts[0]).to.match(/^404 refused Unknown model$/);
      expect(texts[1]).to.match(/^402 refused Budget reached \(the key's monthly budget\)$/);
      await page.getByTestId('usage-totals').filter({ hasText: '2 requests match (2 refused), costing $0.00 in total.' }).waitFor();

      await page.goto(`${tg.url}/console/analytics`);
      await heading('Analytics');
      const reasons = page.getByTestId('refusal-reasons');
      await reasons.locator('tbody tr').first().waitFor();
      const rows = await reasons.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
      expect(rows.map((row) => [row[0], row[1], row[3]])).to.deep.include.members([
        ['Budget reached', "the key's monthly budget", '1'],
        ['Unknown model', '—', '1'],
      ]);
      expect(problems.all()).to.deep.equal([]);
    });

    it('says a budget that refused a request is blocked until it resets, on the dashboard', async () => {
      await logIn();
      const blocked = page.getByTestId(`budget-key-${ciKey}`).getByTestId('budget-blocked');
      await blocked.waitFor();
      expect(await blocked.textContent()).to.match(/^blocked until it resets .+: < \$0\.01 spent \(70\.0%\), not enough left for the next request\.$/);
      await page.getByTestId('budget-banner').filter({ hasText: 'refused a request: it is blocked until' }).waitFor();
      expect(problems.all()).to.deep.equal([]);
    });

    it("adds up every page of Usage to the total it states, and remembers the columns chosen", async () => {
      await logIn();
      await page.goto(`${tg.url}/console/usage?status=ok`);
      await heading('Usage');
      const totals = page.getByTestId('usage-totals');
      await totals.waitFor();
      expect(await totals.textContent()).to.match(new RegExp(`^${STORED_CHARGES + 1} requests match, costing .+ in total; this page shows 100\\.$`));
      const stated = unitsToNano((await page.getByTestId('usage-total-cost').getAttribute('title'))!);
      const headers = await page.getByTestId('usage-table').locator('thead th').allTextContents();
      expect(headers).to.deep.equal(['Time', 'Token', 'Model', 'Cost', 'Status']);
      const costColumn = headers.indexOf('Cost');
      let sum = 0n;
      let rows = 0;
      for (let pageNumber = 1; ; pageNumber += 1) {
        // Each cost to the cent on screen, exactly in its title.
        const cells = await page.getByTestId('usage-table').locator(`tbody tr td:nth-child(${costColumn + 1}) .money`).evaluateAll((spans) => spans.map((span) => span.getAttribute('title') ?? ''));
        rows += cells.length;
        for (const cell of cells) sum += unitsToNano(cell);
        const older = page.getByTestId('usage-older');
        if (await older.isDisabled()) break;
        const first = await page.getByTestId('usage-table').locator('tbody tr').first().textContent();
        await older.click();
        await page.waitForFunction((before) => {
          const doc = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document;
          const row = doc.querySelector('[data-testid="usage-table"] tbody tr');
          return row !== null && row.textContent !== before;
        }, first);
        expect(pageNumber).to.be.below(5);
      }
      expect(rows).to.equal(STORED_CHARGES + 1);
      expect(sum).to.equal(stated);

      // Columns chosen stay chosen on the next visit.
      await page.getByTestId('column-chooser').locator('summary').click();
      await page.getByTestId('column-chooser').getByLabel('Input', { exact: true }).check();
      await page.getByTestId('usage-table').locator('thead th', { hasText: 'Input' }).waitFor();
      await page.reload();
      await page.getByTestId('usage-table').waitFor();
      expect(await page.getByTestId('usage-table').locator('thead th').allTextContents()).to.deep.equal(['Time', 'Token', 'Model', 'Cost', 'Status', 'Input']);
      expect(problems.all()).to.deep.equal([]);
    });

    it(viewport === PHONE ? 'scrolls no page sideways, and folds the navigation behind a Menu button' : 'scrolls no page sideways, with every link in the bar', async () => {
      await logIn();
      for (const [path, title] of PAGES) {
        await page.goto(`${tg.url}${path}`);
        await heading(title);
        // Tables and lists load after the heading.
        await page.waitForLoadState('networkidle');
        expect(await scrollWidth(), `scrollWidth of ${path}`).to.be.at.most(viewport.width);
      }
      const toggle = page.getByTestId('nav-toggle');
      const usageLink = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage', exact: true });
      if (viewport === PHONE) {
        expect(await usageLink.isVisible()).to.equal(false);
        await toggle.click();
        expect(await toggle.getAttribute('aria-expanded')).to.equal('true');
        await usageLink.click();
        await heading('Usage');
        expect(await usageLink.isVisible(), 'the menu closes on the next page').to.equal(false);
      } else {
        expect(await toggle.isVisible()).to.equal(false);
        expect(await usageLink.isVisible()).to.equal(true);
      }
      expect(problems.all()).to.deep.equal([]);
    });
  });
}
