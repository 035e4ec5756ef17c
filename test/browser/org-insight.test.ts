/**
 * Acting for an organisation in a real browser, beyond Members, Tokens and Usage: the Dashboard
 * shows the organisation's balance and its members' spending today; Sessions lists every member's
 * sessions for an owner and one member's once filtered, and opens one with its member's requests
 * and a request in full; Analytics sums spend by member; Tokens changes an organisation key's
 * limits; Statements says whose statements they are. A member sees only their own, and no member
 * filter. Each page passes axe-core and does not scroll sideways at 390 px.
 */
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { issueApiKey } from '../../src/auth/issue-key';
import { formatUnits, unitsToNano } from '../../src/billing/money';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { seriousViolations } from './axe';
import { createLoginAccount, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor, watchPage, type PageGlobals, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const PHONE = { width: 390, height: 844 } as const;

describe('browser: acting for an organisation (dashboard, sessions by member, analytics, key limits, statements)', function () {
  this.timeout(120_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  const contexts: BrowserContext[] = [];
  const problems: PageProblems[] = [];
  let orgId: string;
  let bobId: string;
  let bobKeyId: string;

  /** One paid chat request (1,200 × 2 + 300 × 8 per 1M = 0.0048) with `secret`, in session `session`. */
  async function spend(secret: string, session: string): Promise<void> {
    fake.enqueue(chatCompletion({ inputTokens: 1200, outputTokens: 300, model: 'gpt-priced' }));
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-tollgate-session': session },
      body: JSON.stringify({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.clone().text()).to.equal(200);
    await res.arrayBuffer();
  }

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'organisation insight'));
    const olive = await createLoginAccount(tg.store, 'olive', PASSWORD);
    const bob = await createLoginAccount(tg.store, 'bob', PASSWORD);
    bobId = bob.id;
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
    await tg.store.credit({ accountId: orgId, amount: unitsToNano('5'), kind: 'admin', actor: 'test', note: null });
    const oliveKey = await issueApiKey(tg.store, { accountId: orgId, memberAccountId: olive.id, name: 'olive-ci' });
    const bobKey = await issueApiKey(tg.store, { accountId: orgId, memberAccountId: bob.id, name: 'bob-laptop' });
    bobKeyId = bobKey.record.id;
    // Bob: two requests in one session; olive: one in another.
    await spend(bobKey.key, 'bob-session');
    await spend(bobKey.key, 'bob-session');
    await spend(oliveKey.key, 'olive-session');
    await waitFor(() => tg.store.listCharges({ accountId: orgId }), (charges) => charges.length === 3);
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

  async function signedIn(name: string, viewport: { width: number; height: number } = { width: 1366, height: 900 }): Promise<Page> {
    // axe is added from the installed package, so the context bypasses the console's CSP.
    const context = await browser.newContext({ viewport, locale: 'en-US', bypassCSP: true });
    contexts.push(context);
    const page = await context.newPage();
    problems.push(await watchPage(page));
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await heading(page, 'Dashboard');
    return page;
  }

  const heading = (page: Page, text: string) => page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth);

  async function accessible(page: Page, where: string): Promise<void> {
    await page.waitForLoadState('networkidle');
    expect((await seriousViolations(page)).map((line) => `${where}: ${line}`)).to.deep.equal([]);
  }

  async function open(page: Page, link: string, title: string): Promise<void> {
    await page.getByRole('link', { name: link, exact: true }).first().click();
    await heading(page, title);
  }

  it("shows an owner the organisation's balance and every member's spend, then one member's sessions, a session and a request", async () => {
    const owner = await signedIn('olive');
    await owner.getByTestId('account-switcher').selectOption({ label: 'acme (owner)' });
    await heading(owner, 'Dashboard');
    await owner.getByTestId('dashboard-whose').waitFor();
    const balance = formatUnits((await tg.store.balance(orgId)).balance);
    expect(balance, 'three requests of 0.0048 spent from 5').to.equal('4.9856');
    await owner.getByTestId('balance').and(owner.locator(`[title="${balance}"]`)).waitFor();
    expect(await owner.getByTestId('balance').textContent()).to.equal('$4.99');
    await owner.getByTestId('today-requests').filter({ hasText: /^3$/ }).waitFor();
    expect(await owner.getByTestId('today-cost').getAttribute('title')).to.equal('0.0144');
    await owner.getByTestId('recent-requests').getByRole('row').filter({ hasText: 'bob-laptop' }).first().waitFor();
    // One member's spending, chosen on the dashboard.
    await owner.getByTestId('dashboard-member').selectOption({ label: 'bob' });
    await owner.getByTestId('today-requests').filter({ hasText: /^2$/ }).waitFor();
    expect(await owner.getByTestId('today-cost').getAttribute('title')).to.equal('0.0096');
    expect(await owner.getByTestId('recent-requests').getByText('olive-ci').count(), "olive's request is not bob's").to.equal(0);
    await accessible(owner, 'Dashboard (organisation owner)');

    // Sessions: both members' until filtered, then bob's only, in the URL.
    await open(owner, 'Sessions', 'Sessions');
    const sessions = owner.getByTestId('sessions-table');
    await sessions.getByText('bob-session').waitFor();
    await sessions.getByText('olive-session').waitFor();
    await owner.getByLabel('Member', { exact: true }).selectOption({ label: 'bob' });
    await owner.getByRole('button', { name: 'Show', exact: true }).click();
    await sessions.getByText('olive-session').waitFor({ state: 'detached' });
    await sessions.getByText('bob-session').waitFor();
    expect(new URL(owner.url()).searchParams.get('member_id')).to.equal(bobId);
    await accessible(owner, 'Sessions (organisation owner, one member)');

    await sessions.getByRole('link', { name: 'bob-session' }).click();
    await heading(owner, 'Session');
    expect(await owner.getByTestId('session-requests').textContent()).to.equal('2');
    expect(await owner.getByTestId('session-cost').locator('.money').getAttribute('title')).to.equal('0.0096');
    const requests = owner.getByTestId('session-requests-table').getByRole('row').filter({ hasText: 'bob-laptop' });
    expect(await requests.filter({ hasText: 'bob' }).count()).to.equal(2);
    await requests.first().getByRole('link').click();
    await heading(owner, 'Request');
    expect(await owner.getByTestId('request-cost').textContent()).to.include('0.0048');

    // Analytics: spend by member.
    await open(owner, 'Analytics', 'Analytics');
    const byMember = owner.getByTestId('by-member');
    await byMember.getByRole('row').filter({ hasText: 'bob' }).filter({ hasText: '2' }).waitFor();
    await byMember.getByRole('row').filter({ hasText: 'olive' }).waitFor();
    expect(await owner.getByTestId('analytics-total-cost').getAttribute('title')).to.equal('0.0144');
    await accessible(owner, 'Analytics (organisation owner)');

    // Statements: an owner's are the organisation's.
    await open(owner, 'Statements', 'Statements');
    expect(await owner.getByTestId('statements-whose').textContent()).to.equal("acme's statements.");
    await owner.getByTestId('statements-table').waitFor();
  });

  it("changes an organisation key's limits from Tokens, as its owner", async () => {
    const owner = await signedIn('olive');
    await owner.getByTestId('account-switcher').selectOption({ label: 'acme (owner)' });
    await open(owner, 'Tokens', 'Tokens');
    await owner.getByRole('button', { name: 'Edit limits for bob-laptop' }).click();
    await owner.getByLabel('Spend limit').fill('2.5');
    await owner.getByLabel('Requests per minute').fill('12');
    await owner.getByRole('button', { name: 'Save limits' }).click();
    await owner.getByText('Limits of “bob-laptop” saved.').waitFor({ state: 'attached' });
    const key = (await tg.store.listKeys({ accountId: orgId })).find((candidate) => candidate.id === bobKeyId)!;
    expect(key.spendLimit).to.equal(unitsToNano('2.5'));
    expect(key.rateLimits).to.deep.include({ rpm: 12 });
    await owner.getByTestId('key-table').getByRole('row').filter({ hasText: 'bob-laptop' }).filter({ hasText: '$2.50' }).waitFor();
  });

  it('shows a member only their own spending, with no member filter, and says whose statements they are', async () => {
    const member = await signedIn('bob');
    await member.getByTestId('account-switcher').selectOption({ label: 'acme (member)' });
    await heading(member, 'Dashboard');
    await member.getByTestId('dashboard-whose').waitFor();
    // The balance is the organisation's, the spending his own.
    expect(await member.getByTestId('balance').getAttribute('title')).to.equal(formatUnits((await tg.store.balance(orgId)).balance));
    await member.getByTestId('today-requests').filter({ hasText: /^2$/ }).waitFor();
    await member.getByTestId('recent-requests').getByText('bob-laptop').first().waitFor();
    expect(await member.getByTestId('recent-requests').getByText('olive-ci').count()).to.equal(0);
    await member.waitForLoadState('networkidle');
    expect(await member.getByTestId('dashboard-member').count(), 'no member filter for a member').to.equal(0);

    await open(member, 'Sessions', 'Sessions');
    await member.getByTestId('sessions-table').getByText('bob-session').waitFor();
    expect(await member.getByTestId('sessions-table').getByText('olive-session').count()).to.equal(0);
    expect(await member.getByLabel('Member', { exact: true }).count()).to.equal(0);
    await accessible(member, 'Sessions (organisation member)');

    await open(member, 'Statements', 'Statements');
    await member.getByTestId('statements-whose').filter({ hasText: "your personal account's statements; acme's are for its owners and billing members" }).waitFor();

    // At a phone's width the organisation's Dashboard and Sessions fit.
    const phone = await signedIn('bob', PHONE);
    await phone.getByTestId('account-switcher').selectOption({ label: 'acme (member)' });
    await phone.getByTestId('recent-requests').getByText('bob-laptop').first().waitFor();
    await accessible(phone, 'Dashboard (organisation) at 390 px');
    expect(await scrollWidth(phone), 'scrollWidth of the Dashboard at 390 px').to.be.at.most(PHONE.width);
    await phone.goto(`${tg.url}/console/sessions`);
    await heading(phone, 'Sessions');
    await phone.getByTestId('sessions-table').getByText('bob-session').waitFor();
    await accessible(phone, 'Sessions (organisation) at 390 px');
    expect(await scrollWidth(phone), 'scrollWidth of Sessions at 390 px').to.be.at.most(PHONE.width);
  });
});
