/**
 * Card payments in a real browser: Top Up's preset and custom amounts go to the fake Stripe's
 * checkout page, which pays, sends the signed webhook and returns to the console's Payments page,
 * where the new balance shows; the card kept by that top-up then turns auto-recharge on; an admin
 * sees the payment under Admin → Payments. Without Chromium the suite skips itself.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { unitsToNano } from '../../src/billing/money';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chromiumProblem, consoleYaml, createLoginAccount, launchChromium, newContext, saveScreenshot, watchPage, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';

describe('browser: card payments', function () {
  this.timeout(60_000);
  let browser: Browser;
  let upstream: FakeUpstream;
  let stripe: FakeStripe;
  let tg: TestGateway;
  let context: BrowserContext | null = null;
  let page: Page;
  let problems: PageProblems;

  before(async function () {
    const problem = chromiumProblem();
    if (problem !== null) {
      console.log(`      ${problem}: browser payments suite skipped`);
      this.skip();
    }
    upstream = await startFakeUpstream();
    stripe = await FakeStripe.start();
    tg = await startTestGateway({
      yaml: `${consoleYaml(upstream.url)}
payments:
  stripe: { secret_key: ${SECRET_KEY}, webhook_secret: ${WEBHOOK_SECRET}, currency: usd, presets: [1000, 2500], units_per_currency_unit: 1.25, api_base: "${stripe.url}", reconcile_interval_seconds: 0 }
`,
    });
    stripe.webhookUrl = `${tg.url}/api/payments/stripe/webhook`;
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await tg?.stop();
    await stripe?.close();
    await upstream?.close();
  });

  afterEach(async function () {
    if (context === null) return;
    await saveScreenshot(page, this.currentTest?.fullTitle() ?? 'browser-payments').catch(() => undefined);
    await context.close();
    context = null;
  });

  async function logIn(name: string): Promise<void> {
    context = await newContext(browser);
    page = await context.newPage();
    problems = await watchPage(page);
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard', exact: true }).waitFor();
  }

  async function payOnStripe(expectedAmount: string): Promise<void> {
    await page.waitForURL(`${stripe.url}/pay/**`);
    expect(await page.locator('#amount').textContent()).to.equal(expectedAmount);
    await page.locator('#pay').click();
    await page.waitForURL(`${tg.url}/console/payments?order=*`);
  }

  it('tops up with a preset and a custom amount through the checkout page, then sets up auto-recharge', async () => {
    const user = await createLoginAccount(tg.store, 'card-user', PASSWORD);
    await logIn(user.name);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Top Up', exact: true }).click();

    // A preset, keeping the card: 10.00 USD shown, asked and credited as 12.5 units.
    await page.getByTestId('preset-1000').waitFor();
    expect(await page.getByTestId('preset-1000').textContent()).to.contain('10.00 USD');
    await page.getByTestId('save-card').check();
    await page.getByTestId('preset-1000').click();
    await payOnStripe('10.00 USD');
    const returned = page.getByTestId('payment-return');
    await returned.getByText('Payment received').waitFor();
    expect(await returned.textContent()).to.contain('Your balance is now $12.50');
    expect((await tg.store.balance(user.id)).balance).to.equal(unitsToNano('12.5'));
    const rows = await page.getByTestId('payments-table').locator('tbody tr').count();
    expect(rows).to.equal(1);
    expect(await page.getByTestId('payments-table').getByRole('link', { name: 'Receipt' }).getAttribute('href')).to.match(/\/receipts\/ch_/);

    // A custom amount with cents.
    await page.goto(`${tg.url}/console/topup`);
    await page.getByLabel('Amount (USD)').fill('7.35');
    await page.getByRole('button', { name: 'Pay by card' }).click();
    await payOnStripe('7.35 USD');
    await returned.getByText('Payment received').waitFor();
    expect((await tg.store.balance(user.id)).balance).to.equal(unitsToNano('12.5') + unitsToNano('9.1875'));
    expect(stripe.calls('POST', '/v1/checkout/sessions').map((call) => call.body.line_items[0].price_data.unit_amount)).to.deep.equal(['1000', '735']);

    // Auto-recharge with the kept card.
    await page.goto(`${tg.url}/console/topup`);
    const settings = page.getByTestId('auto-recharge');
    await settings.getByTestId('recharge-enabled').check();
    await settings.getByLabel('When my balance drops below').fill('5');
    await settings.getByLabel('Charge my card (USD)').fill('20');
    await settings.getByLabel('But never more than this a month (USD)').fill('60');
    // Turning it on asks for the password.
    await settings.getByLabel('Your password (to turn on or raise)').fill(PASSWORD);
    await settings.getByRole('button', { name: 'Save' }).click();
    await settings.getByText('Auto-recharge is on.').waitFor();
    const profile = await tg.store.payments.profile(user.id);
    expect(profile).to.deep.include({ autoRecharge: true, threshold: unitsToNano('5'), rechargeMinor: 2000, monthlyCapMinor: 6000 });
    expect(profile!.paymentMethodId).to.match(/^pm_/);
    expect(problems.all(), 'console errors, page errors, CSP violations or dialogs').to.deep.equal([]);
  });

  it('shows an admin every account\'s payments and reconciles on request', async () => {
    const admin = await createLoginAccount(tg.store, 'card-admin', PASSWORD, 'admin');
    await logIn(admin.name);
    await page.goto(`${tg.url}/console/admin/payments`);
    const table = page.getByTestId('admin-payments-table');
    await table.locator('tbody tr').first().waitFor();
    expect(await table.locator('tbody tr').count()).to.equal(2);
    await page.getByRole('button', { name: 'Look up pending payments in Stripe' }).click();
    await page.getByText(/^Checked 0: 0 credited/).waitFor();
    expect(problems.all(), 'console errors, page errors, CSP violations or dialogs').to.deep.equal([]);
  });
});
