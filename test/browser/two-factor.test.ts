/**
 * Two-factor sign-in and sessions in a real browser: enrolling from the Account page with codes
 * computed here from the key the page shows (as an authenticator app would), signing in with a code
 * and with a recovery code (then spent), a wrong or replayed code refused, ending another session
 * and seeing its next API call refused, and an administrator without a second factor sent to enrol
 * from its first sign-in (`console.require_2fa: admins`, the default).
 */
import { expect } from 'chai';
import { Secret, TOTP } from 'otpauth';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

function codeOf(secret: string, steps = 0): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), period: 30, digits: 6, timestamp: Date.now() + steps * 30_000 });
}

describe('browser: two-factor sign-in and sessions', function () {
  this.timeout(90_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  const contexts: BrowserContext[] = [];

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'two-factor', { require2fa: 'admins' }));
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

  /** A fresh browser profile on the sign-in page. */
  async function freshPage(): Promise<Page> {
    const context = await newContext(browser);
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${tg.url}/console`);
    return page;
  }

  async function signIn(page: Page, name: string, code?: string): Promise<void> {
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    if (code !== undefined) {
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.getByLabel('Two-factor code').waitFor();
      await page.getByLabel('Two-factor code').fill(code);
    }
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
  }

  const heading = (page: Page, text: string) => page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();

  it('enrols TOTP from the Account page, signs in with a code and a recovery code, refuses wrong and replayed codes', async () => {
    await createLoginAccount(tg.store, 'tfa-user', PASSWORD);
    const page = await freshPage();
    await signIn(page, 'tfa-user');
    await heading(page, 'Dashboard');
    await page.goto(`${tg.url}/console/account`);
    await heading(page, 'Account');
    const section = page.getByTestId('two-factor');
    await section.getByLabel('Your password').fill(PASSWORD);
    await section.getByRole('button', { name: 'Set up', exact: true }).click();
    await page.getByTestId('totp-qr').waitFor();
    const secret = (await page.getByTestId('totp-secret').textContent())!.trim();
    await section.getByLabel('The 6-digit code the app shows').fill(codeOf(secret));
    await section.getByRole('button', { name: 'Turn on', exact: true }).click();
    await page.getByTestId('recovery-codes').waitFor();
    const recovery = (await page.getByTestId('recovery-codes').locator('li').allTextContents()).map((text) => text.trim());
    expect(recovery).to.have.length(10);

    // Another browser: the password alone is not enough, a wrong code is refused, the app's next code works.
    const second = await freshPage();
    await signIn(second, 'tfa-user', codeOf(secret) === '000000' ? '111111' : '000000');
    await second.getByText('This code is wrong or was used already.').waitFor();
    const next = codeOf(secret, 1);
    await second.getByLabel('Two-factor code').fill(next);
    await second.getByRole('button', { name: 'Log in', exact: true }).click();
    await heading(second, 'Dashboard');

    // The same code again (replayed) is refused; a recovery code works once.
    const third = await freshPage();
    await signIn(third, 'tfa-user', next);
    await third.getByText('This code is wrong or was used already.').waitFor();
    await third.getByLabel('Two-factor code').fill(recovery[0]);
    await third.getByRole('button', { name: 'Log in', exact: true }).click();
    await heading(third, 'Dashboard');

    const fourth = await freshPage();
    await signIn(fourth, 'tfa-user', recovery[0]);
    await fourth.getByText('This code is wrong or was used already.').waitFor();
    expect(await tg.store.recoveryCodesLeft((await tg.store.findAccountByName('tfa-user'))!.id)).to.equal(9);
  });

  it('ends another session from the Account page: its next API call is refused', async () => {
    await createLoginAccount(tg.store, 'two-tabs', PASSWORD);
    const mine = await freshPage();
    await signIn(mine, 'two-tabs');
    await heading(mine, 'Dashboard');
    const other = await freshPage();
    await signIn(other, 'two-tabs');
    await heading(other, 'Dashboard');
    const status = () => other.evaluate(async () => (await fetch('/api/account', { credentials: 'same-origin' })).status);
    expect(await status()).to.equal(200);

    await mine.goto(`${tg.url}/console/account`);
    await heading(mine, 'Account');
    const table = mine.getByTestId('session-table');
    await table.waitFor();
    expect(await table.locator('tbody tr').count()).to.equal(2);
    await table.getByRole('button', { name: /^End session/ }).click();
    await mine.getByText('Session ended.').waitFor();
    expect(await status()).to.equal(401);
    expect(await mine.evaluate(async () => (await fetch('/api/account', { credentials: 'same-origin' })).status)).to.equal(200);
  });

  it('sends an administrator without a second factor to enrol from the first sign-in, no other admin enrolled', async () => {
    await createLoginAccount(tg.store, 'deputy', PASSWORD, 'admin');

    const page = await freshPage();
    await signIn(page, 'deputy');
    await heading(page, 'Account');
    await page.getByTestId('enrol-required').waitFor();
    // The admin pages refuse until it enrols, and send it back here.
    await page.goto(`${tg.url}/console/admin/accounts`);
    await heading(page, 'Account');
    await page.getByTestId('enrol-required').waitFor();
  });
});
