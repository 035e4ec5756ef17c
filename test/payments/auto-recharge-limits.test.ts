/**
 * Auto-recharge within bounds, against the fake Stripe: the operator's limits
 * (`payments.stripe.auto_recharge.max_monthly_cap`, `max_threshold`) refuse a setting above them;
 * turning it on or raising it asks for the password, or a current code with two-factor sign-in on,
 * while lowering it or turning it off does not; an account flagged by a disputed payment cannot turn
 * it on, and one that has it on is not charged.
 */
import { expect } from 'chai';
import { Secret, TOTP } from 'otpauth';
import { unitsToNano } from '../../src/billing/money';
import pino from 'pino';
import { Registry } from 'prom-client';
import { StoreBook } from '../../src/billing/store-book';
import { parseConfig } from '../../src/config/load';
import { PaymentMetrics } from '../../src/metrics/payment-metrics';
import { Payments } from '../../src/payments/payments';
import { ApiClient, expectError, type ApiAnswer } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

function stripeYaml(apiBase: string, limits: string): string {
  return `
payments:
  stripe: { secret_key: ${SECRET_KEY}, webhook_secret: ${WEBHOOK_SECRET}, currency: usd, units_per_currency_unit: 1.25, api_base: "${apiBase}", reconcile_interval_seconds: 0${limits} }
`;
}

/** The error's message, once `answer` is the refusal expected. */
function refusal(answer: ApiAnswer, status: number, code: string, field: string): string {
  expectError(answer, status, code, field);
  return answer.body.error.message as string;
}

/** The code an authenticator app shows for `secret`, `steps` 30-second steps from now. */
function codeOf(secret: string, steps = 0): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), period: 30, digits: 6, timestamp: Date.now() + steps * 30_000 });
}

describe('card payments: auto-recharge limits', function () {
  this.timeout(30_000);
  let stripe: FakeStripe;
  let upstream: FakeUpstream;
  let tg: TestGateway;
  let hook: string;

  before(async () => {
    stripe = await FakeStripe.start();
    upstream = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(upstream.url) + stripeYaml(stripe.url, ', auto_recharge: { max_monthly_cap: 5000, max_threshold: 20 }') });
    hook = `${tg.url}/api/payments/stripe/webhook`;
    await passwordHash();
  });

  after(async () => {
    await tg?.stop();
    await upstream?.close();
    await stripe?.close();
  });

  let accounts = 0;

  /** A new account, signed in, with a card saved by a paid 10.00 top-up; returns its client, id and the session paid. */
  async function withSavedCard(): Promise<{ client: ApiClient; id: string; session: any }> {
    accounts += 1;
    const name = `rita-${accounts}`;
    const id = (await addAccount(tg.store, name)).id;
    const client = await ApiClient.login(tg.url, name, PASSWORD);
    const checkout = await client.post('/api/payments/checkout', { amount: 1000, save_card: true });
    expect(checkout.status, checkout.text).to.equal(201);
    const session = stripe.complete(new URL(checkout.body.url).pathname.split('/').pop()!);
    expect((await stripe.deliver(hook, stripe.event('checkout.session.completed', session))).status).to.equal(200);
    return { client, id, session };
  }

  const ON = { enabled: true, threshold: '5', amount: 1000, monthly_cap: 3000 };

  it('states its defaults: a monthly cap of at most 1,000.00 and a threshold of at most 1,000 units', () => {
    const config = parseConfig(consoleYaml('http://127.0.0.1:9') + stripeYaml('http://127.0.0.1:9', ''), 'gateway.yaml', {});
    expect(config.payments.stripe!.auto_recharge).to.deep.equal({ max_monthly_cap: 100000, max_threshold: 1000 });
    expect(config.payments.stripe!.max_pending_checkouts).to.equal(5);
  });

  it('refuses a monthly cap or a threshold above the operator\'s limits, naming them, and takes one at them', async () => {
    const { client, id } = await withSavedCard();
    const cap = refusal(await client.put('/api/payments/auto-recharge', { ...ON, monthly_cap: 5001, password: PASSWORD }), 400, 'invalid_request', 'monthly_cap');
    expect(cap).to.include('at most 50.00 USD').and.include('payments.stripe.auto_recharge.max_monthly_cap');
    const threshold = refusal(await client.put('/api/payments/auto-recharge', { ...ON, threshold: '20.000000001', password: PASSWORD }), 400, 'invalid_request', 'threshold');
    expect(threshold).to.include('at most 20').and.include('payments.stripe.auto_recharge.max_threshold');
    expect((await tg.store.payments.profile(id))!.autoRecharge).to.equal(false);

    const atLimits = await client.put('/api/payments/auto-recharge', { ...ON, threshold: '20', monthly_cap: 5000, password: PASSWORD });
    expect(atLimits.status, atLimits.text).to.equal(200);
    expect(await tg.store.payments.profile(id)).to.deep.include({ autoRecharge: true, threshold: unitsToNano('20'), monthlyCapMinor: 5000 });
  });

  it('asks for the password to turn it on or raise it, not to lower it or turn it off', async () => {
    const { client, id } = await withSavedCard();
    expect(refusal(await client.put('/api/payments/auto-recharge', ON), 400, 'invalid_request', 'password')).to.include('needs your password');
    expectError(await client.put('/api/payments/auto-recharge', { ...ON, password: 'not my password at all' }), 400, 'invalid_request', 'password');
    expect((await tg.store.payments.profile(id))!.autoRecharge).to.equal(false);
    expect((await client.put('/api/payments/auto-recharge', { ...ON, password: PASSWORD })).status).to.equal(200);

    // Raised: each of the three, alone, asks again.
    for (const raised of [{ threshold: '6' }, { amount: 1500 }, { monthly_cap: 4000 }]) {
      expectError(await client.put('/api/payments/auto-recharge', { ...ON, ...raised }), 400, 'invalid_request', 'password');
    }
    expect(await tg.store.payments.profile(id)).to.deep.include({ threshold: unitsToNano('5'), rechargeMinor: 1000, monthlyCapMinor: 3000 });
    // Lowered, or turned off: no password.
    expect((await client.put('/api/payments/auto-recharge', { ...ON, threshold: '4', monthly_cap: 2000 })).status).to.equal(200);
    expect((await client.put('/api/payments/auto-recharge', { enabled: false })).status).to.equal(200);
    // Off, turning it on again asks again.
    expectError(await client.put('/api/payments/auto-recharge', { ...ON, threshold: '4', monthly_cap: 2000 }), 400, 'invalid_request', 'password');
  });

  it('with two-factor sign-in on, asks for a current code instead, and refuses a replayed one', async () => {
    const { client, id } = await withSavedCard();
    const begun = await client.post('/api/account/2fa', { password: PASSWORD });
    expect(begun.status, begun.text).to.equal(201);
    expect((await client.post('/api/account/2fa/confirm', { code: codeOf(begun.body.secret) })).status).to.equal(200);

    expectError(await client.put('/api/payments/auto-recharge', ON), 401, 'two_factor_required', 'code');
    // The password alone is not enough once a second factor guards the account.
    expectError(await client.put('/api/payments/auto-recharge', { ...ON, password: PASSWORD }), 401, 'two_factor_required', 'code');
    expect((await tg.store.payments.profile(id))!.autoRecharge).to.equal(false);
    const code = codeOf(begun.body.secret, 1);
    const on = await client.put('/api/payments/auto-recharge', { ...ON, code });
    expect(on.status, on.text).to.equal(200);
    expectError(await client.put('/api/payments/auto-recharge', { ...ON, monthly_cap: 4000, code }), 401, 'invalid_credentials', 'code');
    expect((await tg.store.payments.profile(id))!.monthlyCapMinor).to.equal(3000);
  });

  it('refuses to turn it on while the account is flagged by a dispute', async () => {
    const { client, id, session } = await withSavedCard();
    expect((await stripe.deliver(hook, stripe.event('charge.dispute.created', stripe.dispute(session.payment_intent, 1000)))).status).to.equal(200);
    expect((await tg.store.payments.profile(id))!.flaggedAt).to.be.instanceOf(Date);

    const refused = refusal(await client.put('/api/payments/auto-recharge', { ...ON, password: PASSWORD }), 409, 'conflict', 'enabled');
    expect(refused).to.include('flagged');
    expect((await tg.store.payments.profile(id))!.autoRecharge).to.equal(false);
  });

  it('charges no card of a flagged account that has it on (set before the flag)', async () => {
    const { id, session } = await withSavedCard();
    expect((await stripe.deliver(hook, stripe.event('charge.dispute.created', stripe.dispute(session.payment_intent, 1000)))).status).to.equal(200);
    const profile = await tg.store.payments.saveProfile(id, { autoRecharge: true, threshold: unitsToNano('20'), rechargeMinor: 1000, monthlyCapMinor: 3000 });
    expect(profile.flaggedAt).to.be.instanceOf(Date);
    const intents = stripe.calls('POST', '/v1/payment_intents').length;
    const config = parseConfig(consoleYaml(upstream.url) + stripeYaml(stripe.url, ''), 'gateway.yaml', {}).payments.stripe!;
    const payments = new Payments({ store: tg.store, funds: new StoreBook(tg.store), logger: pino({ level: 'silent' }), metrics: new PaymentMetrics(new Registry()), config: () => config });

    expect(await payments.recharge(profile)).to.equal('flagged');
    expect(stripe.calls('POST', '/v1/payment_intents')).to.have.length(intents);
    expect(await tg.store.payments.listOrders({ accountId: id, kind: 'auto_recharge' })).to.deep.equal([]);
  });
});
