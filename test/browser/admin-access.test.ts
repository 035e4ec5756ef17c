/**
 * An administrator's access controls in a real browser, under Admin → Accounts: the operator's
 * limits on another account's key (which its owner then sees marked as the operator's, and which
 * /v1 enforces), and ending every session and management token of an account, after which that
 * account's next API call is refused.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { issueApiKey } from '../../src/auth/issue-key';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

describe('browser: an administrator\'s access controls', function () {
  this.timeout(90_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  const contexts: BrowserContext[] = [];

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'admin access'));
    await createLoginAccount(tg.store, 'warden', PASSWORD, 'admin');
  });

  after(async () => {
    await stopConsoleRig({ browser, fake, tg });
  });

  afterEach(async function () {
    const title = this.currentTest?.fullTitle() ?? 'browser-test';
    const last = contexts.at(-1);
    if (last !== undefined) await saveScreenshot(last.pages()[0], title).catch(() => undefined);
    for (const context of contexts.splice(0)) await context.close();
  });

  async function signedIn(name: string): Promise<Page> {
    const context = await newContext(browser);
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await heading(page, 'Dashboard');
    return page;
  }

  const heading = (page: Page, text: string) => page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
  const apiStatus = (page: Page) => page.evaluate(async () => (await fetch('/api/account', { credentials: 'same-origin' })).status);

  async function chat(key: string, model: string) {
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: res.status, json: (await res.json()) as { error?: { code?: string } } };
  }

  it("sets the operator's limits on another account's key; the owner sees them marked and /v1 enforces them", async () => {
    const owner = await createLoginAccount(tg.store, 'keyholder', PASSWORD);
    const { record, key } = await issueApiKey(tg.store, { accountId: owner.id, name: 'laptop' });
    const admin = await signedIn('warden');
    await admin.goto(`${tg.url}/console/admin/accounts`);
    await heading(admin, 'Accounts');
    await admin.getByRole('button', { name: 'Keys of keyholder', exact: true }).click();
    const keys = admin.getByTestId('admin-key-table');
    await keys.waitFor();
    await keys.getByRole('button', { name: 'Operator limits for laptop', exact: true }).click();
    await admin.getByLabel('Spend limit').fill('2');
    await admin.getByRole('checkbox', { name: 'claude-priced', exact: true }).check();
    await admin.getByLabel('Requests per minute').fill('30');
    await admin.getByLabel('Allowed networks').fill('10.0.0.0/8');
    await admin.getByLabel('Amount', { exact: true }).fill('1');
    await admin.getByLabel('Period').selectOption('week');
    await admin.getByRole('button', { name: 'Save operator limits', exact: true }).click();
    await admin.getByText('Operator limits of “laptop” (keyholder) saved').waitFor();
    // The panel shows the key list again, with what the operator set.
    await keys.getByText('spend limit $2.00 · models claude-priced · 30 rpm · networks 10.0.0.0/8 · budget $1.00 a week (UTC)').waitFor();

    const stored = (await tg.store.listKeys({ accountId: owner.id })).find((candidate) => candidate.id === record.id)!;
    expect(stored.operatorLimits).to.deep.equal({
      spendLimit: 2_000_000_000n,
      models: ['claude-priced'],
      rateLimits: { rpm: 30 },
      allowedNetworks: ['10.0.0.0/8'],
      budget: { amount: 1_000_000_000n, period: 'week', timezone: 'UTC' },
    });
    expect(stored).to.deep.include({ spendLimit: 2_000_000_000n, models: ['claude-priced'], rateLimits: { rpm: 30 } });
    const [entry] = await tg.store.listAudit({ target: record.id, action: 'key.limits' });
    expect(entry.actor).to.equal('warden');

    // From 127.0.0.1, outside the operator's networks.
    const refused = await chat(key, 'claude-priced');
    expect(refused.status).to.equal(403);
    expect(refused.json.error?.code).to.equal('ip_not_allowed');

    // The owner sees which limits are the operator's.
    const page = await signedIn('keyholder');
    await page.goto(`${tg.url}/console/token`);
    await heading(page, 'Tokens');
    await page.getByTestId('key-table').getByText('spend limit $2.00 · models claude-priced').waitFor();
    await page.getByRole('button', { name: 'Budget for laptop', exact: true }).click();
    await page.getByTestId('operator-budget').waitFor();
    expect(await page.getByTestId('operator-budget').textContent()).to.include('$1.00 a week (UTC)');
    // A looser limit than the operator's is refused in words, both figures shown; nothing is saved.
    await page.getByRole('button', { name: 'Edit limits for laptop', exact: true }).click();
    await page.getByLabel('Spend limit').fill('50');
    await page.getByRole('button', { name: 'Save limits', exact: true }).click();
    await page.getByText("The spend limit is capped at the operator's 2: 50 would be looser.", { exact: false }).waitFor();
    expect((await tg.store.listKeys({ accountId: owner.id })).find((candidate) => candidate.id === record.id)!.spendLimit).to.equal(2_000_000_000n);

    // Clearing every limit from the admin form gives the key back its freedom.
    await admin.getByRole('button', { name: 'Operator limits for laptop', exact: true }).click();
    expect(await admin.getByLabel('Spend limit').inputValue()).to.equal('2');
    await admin.getByLabel('Spend limit').fill('');
    await admin.getByRole('checkbox', { name: 'claude-priced', exact: true }).uncheck();
    await admin.getByLabel('Requests per minute').fill('');
    await admin.getByLabel('Allowed networks').fill('');
    await admin.getByLabel('Amount', { exact: true }).fill('');
    await admin.getByRole('button', { name: 'Save operator limits', exact: true }).click();
    await admin.getByText('Operator limits of “laptop” (keyholder) saved: none.').waitFor();
    expect((await tg.store.listKeys({ accountId: owner.id })).find((candidate) => candidate.id === record.id)!.operatorLimits).to.equal(null);
    expect((await chat(key, 'gpt-broken')).status).to.not.equal(403);
  });

  it("ends every session and token of an account: its next API call is refused (401)", async () => {
    const user = await createLoginAccount(tg.store, 'lost-laptop', PASSWORD);
    const token = newManagementToken();
    await tg.store.createSession({ accountId: user.id, hash: hashSecret(token), kind: 'token', name: 'script', expiresAt: null });
    const userPage = await signedIn('lost-laptop');
    expect(await apiStatus(userPage)).to.equal(200);
    const byToken = () => fetch(`${tg.url}/api/account`, { headers: { authorization: `Bearer ${token}` } }).then((res) => res.status);
    expect(await byToken()).to.equal(200);

    const admin = await signedIn('warden');
    await admin.goto(`${tg.url}/console/admin/accounts`);
    await heading(admin, 'Accounts');
    await admin.getByRole('button', { name: 'End sessions of lost-laptop', exact: true }).click();
    const dialog = admin.getByRole('dialog', { name: 'End the sessions of “lost-laptop”?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'End sessions', exact: true }).click();
    await admin.getByText('Ended 2 sessions and tokens of “lost-laptop”.').waitFor();

    expect(await apiStatus(userPage)).to.equal(401);
    expect(await byToken()).to.equal(401);
    // The administrator's own session is untouched.
    expect(await apiStatus(admin)).to.equal(200);
    const [entry] = await tg.store.listAudit({ target: user.id, action: 'account.sessions_end' });
    expect(entry).to.deep.include({ actor: 'warden' });
  });
});
