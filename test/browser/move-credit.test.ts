/**
 * Moving credit in a real browser: an organisation's owner with a funded personal account opens Top
 * Up, moves 5 into the organisation, and both balances change by exactly 5 (on the page and in the
 * book) with the transfer listed; moving more than the personal account has shows the API's refusal
 * beside the amount, focused, and leaves both balances as they were. A plain member sees no Move
 * credit section. The section passes axe-core.
 */
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { seriousViolations } from './axe';
import { createLoginAccount, saveScreenshot, startConsoleRig, stopConsoleRig, watchPage, type PageGlobals, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

describe('browser: moving credit between a personal account and an organisation', function () {
  this.timeout(120_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  const contexts: BrowserContext[] = [];
  const problems: PageProblems[] = [];
  let oliveId: string;
  let orgId: string;

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'move credit'));
    const olive = await createLoginAccount(tg.store, 'olive', PASSWORD);
    oliveId = olive.id;
    const bob = await createLoginAccount(tg.store, 'bob', PASSWORD);
    const acme = await tg.store.orgs.createOrganisation({ name: 'acme', ownerId: olive.id });
    orgId = acme.id;
    const invitation = await tg.store.orgs.createInvitation({
      organisationId: orgId,
      hash: createHash('sha256').update(randomBytes(32)).digest(),
      invitee: 'bob',
      role: 'member',
      createdBy: olive.id,
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    expect((await tg.store.orgs.acceptInvitation(invitation.id, bob.id, new Date())).ok).to.equal(true);
    await tg.store.credit({ accountId: oliveId, amount: unitsToNano('20'), kind: 'admin', actor: 'test', note: null });
    await tg.store.credit({ accountId: orgId, amount: unitsToNano('1.25'), kind: 'admin', actor: 'test', note: null });
  });

  after(async () => {
    await stopConsoleRig({ browser, fake, tg });
  });

  afterEach(async function () {
    const title = this.currentTest?.fullTitle() ?? 'browser-test';
    if (this.currentTest?.state === 'failed') {
      for (const [index, context] of contexts.entries()) {
        const page = context.pages()[0];
        if (page !== undefined) await saveScreenshot(page, `${title}-${index}`).catch(() => undefined);
      }
    }
    for (const context of contexts.splice(0)) await context.close();
    const seen = problems.splice(0).flatMap((watched) => watched.all());
    expect(seen, 'console errors, page errors, CSP violations or dialogs').to.deep.equal([]);
  });

  async function signedIn(name: string): Promise<{ page: Page; watched: PageProblems }> {
    // axe is added from the installed package, so the context bypasses the console's CSP.
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: 'en-US', bypassCSP: true });
    contexts.push(context);
    const page = await context.newPage();
    const watched = await watchPage(page);
    problems.push(watched);
    await page.goto(`${tg.url}/console/topup`);
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Top Up', exact: true }).waitFor();
    return { page, watched };
  }

  /** The exact balance the section shows for an account (the money element's title). */
  const shownBalance = (page: Page, accountId: string) => page.getByTestId(`move-balance-${accountId}`).getAttribute('title');
  const bookBalance = async (accountId: string) => (await tg.store.balance(accountId)).balance;

  it('moves 5 from the personal account to the organisation, lists it, and shows a shortfall beside the amount', async () => {
    const { page, watched } = await signedIn('olive');
    await page.getByRole('heading', { level: 2, name: 'Move credit' }).waitFor();
    expect(await shownBalance(page, oliveId)).to.equal('20');
    expect(await shownBalance(page, orgId)).to.equal('1.25');
    await page.getByTestId('transfer-table').waitFor();
    expect(await page.getByText('No transfers yet.').isVisible()).to.equal(true);
    await page.waitForLoadState('networkidle');
    expect(await seriousViolations(page)).to.deep.equal([]);

    await page.getByLabel('Direction').selectOption({ label: 'From olive (personal) to acme' });
    await page.getByLabel('Amount', { exact: true }).fill('5');
    await page.getByLabel('Note (optional)').fill('March budget');
    await page.getByRole('button', { name: 'Move credit' }).click();
    await page.getByText('Moved $5.00 from olive to acme.').waitFor();
    await page.getByTestId(`move-balance-${oliveId}`).and(page.locator('[title="15"]')).waitFor();
    expect(await shownBalance(page, oliveId)).to.equal('15');
    expect(await shownBalance(page, orgId)).to.equal('6.25');
    expect(await bookBalance(oliveId)).to.equal(unitsToNano('15'));
    expect(await bookBalance(orgId)).to.equal(unitsToNano('6.25'));
    // The page's own balance line agrees with the section.
    expect(await page.getByTestId('topup-balance-value').getAttribute('title')).to.equal('15');
    const row = page.getByTestId('transfer-table').getByRole('row', { name: /March budget/ });
    await row.waitFor();
    expect(await row.textContent()).to.include('olive').and.to.include('acme').and.to.include('$5.00');

    // More than the personal account has: the API's 409 message, beside the amount and focused.
    watched.allowFailedRequest('/api/transfers', 409);
    await page.getByLabel('Amount', { exact: true }).fill('100');
    await page.getByRole('button', { name: 'Move credit' }).click();
    const refusal = page.getByText('That account has 15 available: a transfer moves at most that.');
    await refusal.waitFor();
    const amount = page.getByLabel('Amount', { exact: true });
    expect(await amount.getAttribute('aria-invalid')).to.equal('true');
    const focused = await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.getAttribute('name') ?? null);
    expect(focused).to.equal('amount');
    expect(await shownBalance(page, oliveId)).to.equal('15');
    expect(await shownBalance(page, orgId)).to.equal('6.25');
    expect(await bookBalance(oliveId)).to.equal(unitsToNano('15'));
    expect(await bookBalance(orgId)).to.equal(unitsToNano('6.25'));
    expect(await page.getByTestId('transfer-table').getByRole('row').count()).to.equal(2);
    await page.waitForLoadState('networkidle');
    expect(await seriousViolations(page)).to.deep.equal([]);
  });

  it('shows no Move credit section to a plain member', async () => {
    const { page } = await signedIn('bob');
    await page.getByTestId('credit-table').waitFor();
    await page.waitForLoadState('networkidle');
    expect(await page.getByRole('heading', { level: 2, name: 'Move credit' }).count()).to.equal(0);
  });
});
