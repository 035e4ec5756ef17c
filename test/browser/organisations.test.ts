/**
 * Organisations in a real browser: an owner makes one on the Members page, invites a second person,
 * who opens the one-time link signed out, logs in and accepts it in their own browser; the account
 * switcher then shows the organisation's balance and members; the owner changes the member's role,
 * sets their limits and removes them; an administrator lists it under Admin → Organisations. Acting
 * for the organisation, Tokens makes a key in it and Usage shows that key's paid request with its
 * cost, which the personal account's Usage does not. Each new page passes axe-core and does not
 * scroll sideways at 390 px.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { seriousViolations } from './axe';
import { createLoginAccount, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor, type PageGlobals } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const PHONE = { width: 390, height: 844 } as const;

describe('browser: organisations (switcher, members, invitations)', function () {
  this.timeout(120_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  const contexts: BrowserContext[] = [];

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'organisations'));
    await createLoginAccount(tg.store, 'olive', PASSWORD);
    await createLoginAccount(tg.store, 'bruno', PASSWORD);
    await createLoginAccount(tg.store, 'ada', PASSWORD, 'admin');
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
  });

  async function newPage(viewport = { width: 1366, height: 900 }): Promise<Page> {
    // axe is added from the installed package, so the context bypasses the console's CSP.
    const context = await browser.newContext({ viewport, locale: 'en-US', bypassCSP: true, permissions: ['clipboard-read', 'clipboard-write'] });
    contexts.push(context);
    return context.newPage();
  }

  async function logIn(page: Page, name: string): Promise<void> {
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
  }

  const heading = (page: Page, text: string) => page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth);

  async function accessible(page: Page, where: string): Promise<void> {
    await page.waitForLoadState('networkidle');
    expect((await seriousViolations(page)).map((line) => `${where}: ${line}`)).to.deep.equal([]);
  }

  it('makes an organisation, invites, accepts in a second browser, switches, changes a role, sets limits and removes', async () => {
    const owner = await newPage();
    await owner.goto(`${tg.url}/console/members`);
    await logIn(owner, 'olive');
    await heading(owner, 'Organisations');
    await accessible(owner, 'Organisations (personal)');
    await owner.getByLabel('Name', { exact: true }).fill('acme');
    await owner.getByRole('button', { name: 'Make organisation' }).click();
    await heading(owner, 'acme');
    const acme = (await tg.store.orgs.listOrganisations()).find((organisation) => organisation.name === 'acme')!;
    await tg.store.credit({ accountId: acme.id, amount: unitsToNano('5'), kind: 'admin', actor: 'test', note: null });

    await owner.getByLabel('Name or e-mail').fill('bruno');
    await owner.getByRole('button', { name: 'Invite', exact: true }).click();
    const linkInput = owner.getByTestId('invitation-link');
    await linkInput.waitFor();
    const link = await linkInput.inputValue();
    expect(link).to.match(/\/console\/join#tgi_/);
    expect(await owner.getByTestId('new-invitation').textContent()).to.match(/works once, for them only, until/);
    await owner.getByTestId('invitations-table').getByText('bruno').waitFor();
    await accessible(owner, 'Members (owner, with a new invitation)');

    // Bruno opens the link signed out, logs in from it, and comes back to accept it.
    const member = await newPage();
    await member.goto(link);
    await heading(member, 'Join an organisation');
    await accessible(member, 'Join (signed out)');
    await member.locator('#main').getByRole('link', { name: 'Log in' }).click();
    await logIn(member, 'bruno');
    await heading(member, 'Join an organisation');
    await member.getByRole('button', { name: 'Accept the invitation' }).click();
    await heading(member, 'acme');
    expect(await member.getByTestId('account-switcher').inputValue()).to.equal(acme.id);
    expect(await member.getByTestId('org-balance').textContent()).to.equal('$5.00');
    await member.getByTestId('header-balance').filter({ hasText: '$5.00' }).waitFor();
    await member.getByTestId('members-table').getByText('olive').waitFor();
    await accessible(member, 'Members (member)');

    // Switching to the personal account and back.
    await member.getByTestId('account-switcher').selectOption({ label: 'bruno (personal)' });
    await heading(member, 'Organisations');
    await member.getByTestId('account-switcher').selectOption({ label: 'acme (member)' });
    await heading(member, 'acme');

    // The owner sees bruno, makes him an admin and sets his limits.
    await owner.reload();
    await heading(owner, 'acme');
    await owner.getByTestId('role-bruno').selectOption('admin');
    await owner.getByText('bruno is now admin.').waitFor({ state: 'attached' });
    expect((await tg.store.orgs.findMember(acme.id, (await tg.store.findAccountByName('bruno'))!.id))?.role).to.equal('admin');
    await owner.getByRole('button', { name: 'Limits of bruno' }).click();
    await owner.getByLabel('Budget', { exact: true }).fill('2');
    await owner.getByLabel('Budget per').selectOption('day');
    await owner.getByLabel('Requests per minute').fill('10');
    await accessible(owner, 'Member limits form');
    await owner.getByRole('button', { name: 'Save limits' }).click();
    await owner.getByTestId('members-table').getByText('$2.00 a day; 10 rpm').waitFor();

    // At a phone's width the Members page fits.
    const phone = await newPage(PHONE);
    await phone.goto(`${tg.url}/console`);
    await logIn(phone, 'olive');
    await heading(phone, 'Dashboard');
    await phone.goto(`${tg.url}/console/members`);
    await heading(phone, 'Organisations');
    // A new browser acts for the personal account until told otherwise.
    await phone.getByTestId('account-switcher').selectOption({ label: 'acme (owner)' });
    await heading(phone, 'acme');
    await phone.getByTestId('members-table').getByText('bruno').waitFor();
    await accessible(phone, 'Members at 390 px');
    expect(await scrollWidth(phone), 'scrollWidth of Members at 390 px').to.be.at.most(PHONE.width);

    // Removing bruno, after the confirmation.
    await owner.getByRole('button', { name: 'Remove bruno' }).click();
    await owner.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await owner.getByText('bruno removed.').waitFor({ state: 'attached' });
    await owner.getByTestId('members-table').getByText('bruno').waitFor({ state: 'detached' });
    expect((await tg.store.orgs.listMembers(acme.id)).map((row) => row.accountName)).to.deep.equal(['olive']);
  });

  it("makes a key on Tokens for the organisation and shows its paid request on the organisation's Usage only", async () => {
    const acme = (await tg.store.orgs.listOrganisations()).find((organisation) => organisation.name === 'acme')!;
    const owner = await newPage();
    await owner.goto(`${tg.url}/console/token`);
    await logIn(owner, 'olive');
    await heading(owner, 'Tokens');
    await owner.getByTestId('account-switcher').selectOption({ label: 'acme (owner)' });
    await owner.getByText("API keys that spend acme's balance").waitFor();
    await owner.getByRole('button', { name: 'Add Token' }).click();
    await owner.getByLabel('Name', { exact: true }).fill('team-ci');
    expect(await owner.getByLabel('Allowed networks').count(), 'no networks on an organisation key').to.equal(0);
    await owner.getByRole('button', { name: 'Create token' }).click();
    const secret = await owner.getByTestId('new-key-secret').inputValue();
    expect(secret).to.match(/^sk-/);
    await owner.getByRole('button', { name: 'Done' }).click();
    // The owner sees every member's keys, each with its member.
    const keyRow = owner.getByTestId('key-table').getByRole('row').filter({ hasText: 'team-ci' });
    await keyRow.filter({ hasText: 'olive' }).waitFor();
    const [made] = (await tg.store.listKeys({ accountId: acme.id })).filter((key) => key.name === 'team-ci');
    expect(made?.memberAccountId, 'made in the organisation, charged to olive').to.equal((await tg.store.findAccountByName('olive'))!.id);
    await accessible(owner, 'Tokens (organisation owner)');

    // One paid request (1,200 × 2 + 300 × 8 per 1M = 0.0048) spends the organisation's balance.
    fake.enqueue(chatCompletion({ inputTokens: 1200, outputTokens: 300, model: 'gpt-priced' }));
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.clone().text()).to.equal(200);
    await res.arrayBuffer();
    await waitFor(() => tg.store.listCharges({ accountId: acme.id }), (charges) => charges.length === 1);

    await owner.getByRole('link', { name: 'Usage', exact: true }).click();
    await heading(owner, 'Usage');
    const usageRow = owner.getByTestId('member-usage-table').getByRole('row').filter({ hasText: 'team-ci' });
    await usageRow.filter({ hasText: 'olive' }).waitFor();
    expect(await usageRow.locator('.money').first().getAttribute('title'), 'its cost').to.equal('0.0048');
    expect(await owner.getByTestId('member-usage-cost').getAttribute('title')).to.equal('0.0048');
    await owner.getByTestId('usage-member').selectOption({ label: 'olive' });
    await usageRow.waitFor();
    await accessible(owner, 'Usage (organisation owner)');

    // The personal account's Usage does not show it.
    await owner.getByTestId('account-switcher').selectOption({ label: 'olive (personal)' });
    await owner.getByTestId('usage-table').waitFor();
    expect(await owner.getByTestId('usage-totals').textContent()).to.match(/^0 requests match/);
    expect(await owner.getByTestId('usage-table').getByText('team-ci').count()).to.equal(0);

    // At a phone's width both pages, as an organisation's, fit.
    const phone = await newPage(PHONE);
    await phone.goto(`${tg.url}/console`);
    await logIn(phone, 'olive');
    await heading(phone, 'Dashboard');
    await phone.getByTestId('account-switcher').selectOption({ label: 'acme (owner)' });
    for (const [path, title, ready] of [['/console/token', 'Tokens', 'key-table'], ['/console/usage', 'Usage', 'member-usage-table']] as const) {
      await phone.goto(`${tg.url}${path}`);
      await heading(phone, title);
      await phone.getByTestId(ready).getByText('team-ci').first().waitFor();
      await accessible(phone, `${title} (organisation) at 390 px`);
      expect(await scrollWidth(phone), `scrollWidth of ${title} at 390 px`).to.be.at.most(PHONE.width);
    }

    // Revoked from the organisation's Tokens page.
    await owner.getByTestId('account-switcher').selectOption({ label: 'acme (owner)' });
    await owner.getByRole('link', { name: 'Tokens', exact: true }).click();
    await heading(owner, 'Tokens');
    await owner.getByRole('button', { name: 'Revoke team-ci' }).click();
    await owner.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await owner.getByText('Token “team-ci” revoked.').waitFor({ state: 'attached' });
    expect((await tg.store.listKeys({ accountId: acme.id })).find((key) => key.name === 'team-ci')?.revokedAt).to.not.equal(null);
  });

  it('lists organisations with their balance and members under Admin → Organisations', async () => {
    for (const viewport of [{ width: 1366, height: 900 }, PHONE]) {
      const page = await newPage(viewport);
      await page.goto(`${tg.url}/console/admin/orgs`);
      await logIn(page, 'ada');
      await heading(page, 'Organisations');
      const row = page.getByTestId('admin-orgs-table').getByRole('row').filter({ hasText: 'acme' });
      await row.filter({ hasText: '$5.00' }).waitFor();
      await page.getByRole('button', { name: 'Members of acme' }).click();
      await page.getByTestId('admin-members-table').getByText('olive').waitFor();
      await accessible(page, `Admin → Organisations at ${viewport.width} px`);
      expect(await scrollWidth(page), `scrollWidth at ${viewport.width} px`).to.be.at.most(viewport.width);
    }
  });
});
