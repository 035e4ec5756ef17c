/**
 * The Statements page in Chromium: an account with a credit and a charge dated in a closed month
 * sees that month's statement with the closing balance the API gives, opens its printable page in a
 * new tab and prints it with Chromium's own PDF printer, whose text carries the statement's number
 * and closing balance; the CSV and PDF links download. At 1366 and 390 px the page has no serious or
 * critical axe violation and does not scroll sideways. Without Chromium the suite skips itself.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import { NO_TOKENS } from '../../src/protocols/types';
import { openSqlite } from '../../src/store/sqlite-driver';
import { PLAIN_CHARGE } from '../helpers/charges';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { pdfText } from '../helpers/pdf-text';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { seriousViolations } from './axe';
import { chromiumProblem, consoleYaml, createLoginAccount, launchChromium, saveScreenshot, watchPage, type PageGlobals } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const VIEWPORTS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }] as const;

interface ListedStatement {
  id: string;
  number: string;
  month: string;
  closing: { exact: string; shown: string };
}

/** The 15th, at noon UTC, of the month two before this one: closed whatever the day today. */
function closedMonthDay(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 15, 12));
}

describe('browser: monthly statements', function () {
  this.timeout(90_000);
  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  let dir: string;
  let context: BrowserContext | null = null;
  let page: Page;
  const dated = closedMonthDay();
  const month = dated.toISOString().slice(0, 7);

  before(async function () {
    const problem = chromiumProblem();
    if (problem !== null) {
      console.log(`      ${problem}: browser statements suite skipped`);
      this.skip();
    }
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-statements-browser-'));
    const file = path.join(dir, 'tollgate.db');
    fake = await startFakeUpstream();
    const yaml = consoleYaml(fake.url).replace('store: { url: "sqlite::memory:" }', `store: { url: "sqlite:${file}" }`);
    tg = await startTestGateway({ yaml, storeFromConfig: true });
    browser = await launchChromium();

    // A month gone by for stella: an operator's credit, then a charge, both dated in it.
    const stella = await createLoginAccount(tg.store, 'stella', PASSWORD);
    await tg.store.credit({ accountId: stella.id, amount: unitsToNano('25'), kind: 'admin', actor: 'test', note: 'welcome' });
    const db = openSqlite(file);
    try {
      // The store dates a credit now; the ledger's tests move it back the same way.
      db.exec(`UPDATE credits SET created_at = ${dated.getTime()}`);
    } finally {
      db.close();
    }
    const key = await tg.createKey({ accountId: stella.id, name: 'ci' });
    await tg.store.recordCharges([{
      ...PLAIN_CHARGE,
      ...NO_TOKENS,
      requestId: 'req_statement_browser',
      accountId: stella.id,
      keyId: key.id,
      model: 'gpt-priced',
      provider: 'openai',
      endpoint: 'chat',
      cost: unitsToNano('3.456789012'),
      status: 200,
      outcome: 'delivered',
      latencyMs: 5,
      createdAt: dated,
      inputTokens: 10,
      outputTokens: 5,
      usageSource: 'upstream',
    }]);
  });

  after(async () => {
    await context?.close();
    await browser?.close();
    await tg?.stop();
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  afterEach(async function () {
    if (context === null) return;
    if (this.currentTest?.state === 'failed') await saveScreenshot(page, `statements-${this.currentTest.title}`).catch(() => undefined);
    await context.close();
    context = null;
  });

  async function logIn(viewport: { width: number; height: number }): Promise<void> {
    // axe is added to the page from the installed package, hence the bypassed CSP.
    context = await browser.newContext({ viewport, locale: 'en-US', bypassCSP: true, acceptDownloads: true });
    page = await context.newPage();
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill('stella');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard', exact: true }).waitFor();
  }

  async function openStatements(): Promise<void> {
    const nav = page.getByRole('navigation', { name: 'Main' });
    const toggle = page.getByTestId('nav-toggle');
    if (await toggle.isVisible()) await toggle.click();
    await nav.getByRole('link', { name: 'Statements', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Statements', exact: true }).waitFor();
    await page.getByTestId('statements-table').locator('tbody tr').first().waitFor();
  }

  it('lists the closed month with the API\'s closing balance, and prints its page to a PDF that carries both', async () => {
    await logIn(VIEWPORTS[0]);
    const problems = await watchPage(page);
    await openStatements();
    const listed = await page.request.get(`${tg.url}/api/statements`);
    expect(listed.status()).to.equal(200);
    const statements = ((await listed.json()) as { statements: ListedStatement[] }).statements;
    const statement = statements.find((entry) => entry.month === month);
    expect(statement, `a statement for ${month}`).to.not.equal(undefined);
    expect(statement!.closing).to.deep.equal({ exact: '21.543210988', shown: '21.54 USD' });

    const row = page.getByTestId('statements-table').locator('tbody tr').filter({ hasText: statement!.number });
    expect(await row.count()).to.equal(1);
    expect(await row.getByTestId('statement-closing').textContent()).to.equal('$21.54');
    expect(await row.getByTestId('statement-closing').getAttribute('title')).to.equal(statement!.closing.exact);
    expect(await row.getByTestId('statement-opening').textContent()).to.equal('$0.00');
    const monthName = dated.toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
    expect(await row.textContent()).to.contain(monthName);

    // The CSV and the PDF download under the statement's number.
    for (const [testId, extension] of [['statement-csv', 'csv'], ['statement-pdf', 'pdf']] as const) {
      const [download] = await Promise.all([page.waitForEvent('download'), row.getByTestId(testId).click()]);
      expect(download.suggestedFilename()).to.equal(`${statement!.number}.${extension}`);
      const saved = readFileSync(await download.path());
      if (extension === 'csv') expect(saved.toString('utf8')).to.contain('21.543210988');
      else expect(pdfText(saved)).to.contain(statement!.number);
    }

    // The printable page opens in a new tab; Chromium prints it as the account would.
    const [printable] = await Promise.all([context!.waitForEvent('page'), row.getByTestId('statement-html').click()]);
    await printable.waitForLoadState('load');
    expect(printable.url()).to.equal(`${tg.url}/api/statements/${statement!.id}?format=html`);
    const pdf = await printable.pdf({ format: 'A4', printBackground: true });
    expect(pdf.subarray(0, 5).toString('latin1')).to.equal('%PDF-');
    const text = pdfText(pdf).replace(/\s+/g, ' ');
    expect(text).to.contain(statement!.number);
    expect(text).to.contain('21.54 USD');
    await printable.close();
    expect(problems.all(), 'console errors, page errors, CSP violations or dialogs').to.deep.equal([]);
  });

  for (const viewport of VIEWPORTS) {
    it(`has no serious or critical axe violation and no sideways scroll at ${viewport.width} px`, async () => {
      await logIn(viewport);
      await openStatements();
      await page.waitForLoadState('networkidle');
      expect(await seriousViolations(page)).to.deep.equal([]);
      const width = await page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth);
      expect(width, 'scrollWidth').to.be.at.most(viewport.width);
    });
  }
});
