/**
 * Auto-recharge against the fake Stripe: a card saved by a top-up, then settles of real priced
 * requests push the balance under the threshold. Twenty concurrent settles crossing it make one
 * charge; the monthly cap holds; three failures in a row turn it off; a card that needs its holder
 * says so. The ledger verifies after each.
 */
import { expect } from 'chai';
import { formatUnits, unitsToNano } from '../../src/billing/money';
import { verifyLedgerCommand } from '../../src/cli/ledger';
import { ApiClient } from '../admin/api-client';
import { addAccount, chat, consoleYaml, PASSWORD, passwordHash, waitFor } from '../admin/fixtures';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

describe('card payments: auto-recharge', function () {
  this.timeout(30_000);
  let stripe: FakeStripe;
  let upstream: FakeUpstream;
  let tg: TestGateway;
  let ann: ApiClient;
  let annId: string;
  let key: string;

  before(async () => {
    stripe = await FakeStripe.start();
    upstream = await startFakeUpstream();
    tg = await startTestGateway({
      yaml: `${consoleYaml(upstream.url)}
payments:
  stripe: { secret_key: ${SECRET_KEY}, webhook_secret: ${WEBHOOK_SECRET}, currency: usd, units_per_currency_unit: 1.25, api_base: "${stripe.url}", reconcile_interval_seconds: 0 }
`,
    });
    await passwordHash();
    annId = (await addAccount(tg.store, 'ann')).id;
    ann = await ApiClient.login(tg.url, 'ann', PASSWORD);
    key = (await tg.createKey({ accountId: annId })).key;
  });

  after(async () => {
    await tg?.stop();
    await upstream?.close();
    await stripe?.close();
  });

  afterEach(async () => {
    const lines: string[] = [];
    expect((await verifyLedgerCommand(tg.store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
  });

  const intents = () => stripe.calls('POST', '/v1/payment_intents');
  const balance = async () => (await tg.store.balance(annId)).balance;

  /** Priced requests, all at once: 70,000 nano-units each (20 input and 10 output tokens of gpt-priced). */
  async function spend(requests: number): Promise<void> {
    for (let i = 0; i < requests; i++) upstream.enqueue(chatCompletion({ text: 'hi', inputTokens: 20, outputTokens: 10 }));
    const answers = await Promise.all(Array.from({ length: requests }, () => chat(tg.url, key, 'gpt-priced')));
    expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
  }

  /** tollgate_auto_recharge_total for one outcome, from the gateway's registry. */
  async function rechargeOutcomes(outcome: string): Promise<number> {
    const metric = await tg.gateway.metrics.registry.getSingleMetric('tollgate_auto_recharge_total')!.get();
    return metric.values.find((value) => value.labels.outcome === outcome)?.value ?? 0;
  }

  /** Saves ann's settings; turning them on or raising them asks for her password. */
  async function settings(body: object) {
    const answer = await ann.put('/api/payments/auto-recharge', { ...body, password: PASSWORD });
    expect(answer.status, answer.text).to.equal(200);
    return answer.body.auto_recharge;
  }

  it('refuses to turn on without a saved card, then saves one with a top-up', async () => {
    const refused = await ann.put('/api/payments/auto-recharge', { enabled: true, threshold: '2', amount: 1000, monthly_cap: 5000 });
    expect(refused.status, refused.text).to.equal(409);
    const checkout = await ann.post('/api/payments/checkout', { amount: 1000, save_card: true });
    expect(checkout.status, checkout.text).to.equal(201);
    const asked = stripe.calls('POST', '/v1/checkout/sessions').at(-1)!;
    expect(asked.body.payment_intent_data.setup_future_usage).to.equal('off_session');
    const session = stripe.complete(new URL(checkout.body.url).pathname.split('/').pop()!);
    expect((await stripe.deliver(`${tg.url}/api/payments/stripe/webhook`, stripe.event('checkout.session.completed', session))).status).to.equal(200);
    expect(await balance()).to.equal(unitsToNano('12.5'));
    const view = (await ann.get('/api/payments/auto-recharge')).body.auto_recharge;
    expect(view).to.deep.include({ enabled: false, card_saved: true });
  });

  it('makes one charge when twenty concurrent settles cross the threshold', async () => {
    // Two requests' worth under the balance: the second settle crosses it, and the eighteen after it too.
    const threshold = unitsToNano('12.5') - 2n * 70_000n + 1n;
    expect(await settings({ enabled: true, threshold: formatUnits(threshold), amount: 1000, monthly_cap: 2500 })).to.deep.include({
      enabled: true,
      amount: '10.00',
      monthly_cap: '25.00',
    });
    const before = await balance();
    await spend(20);
    await waitFor(async () => (await tg.store.payments.listOrders({ accountId: annId, status: 'paid' })).length, (paid) => paid === 2, 'the recharge to be credited');
    expect(intents()).to.have.length(1);
    const charge = intents()[0];
    expect(charge.body).to.deep.include({ amount: '1000', currency: 'usd', off_session: 'true', confirm: 'true' });
    expect(charge.idempotencyKey).to.match(/^tollgate-recharge-pay_/);
    // The charges reach the ledger in batches: the stored balance catches up with all twenty.
    await waitFor(balance, (now) => now - before === unitsToNano('12.5') - 20n * 70_000n, 'the balance: one recharge less twenty requests');
  });

  it('holds the monthly cap: a second crossing recharges, the third would pass the cap and does not', async () => {
    // A threshold above the balance: every settle is a crossing.
    await settings({ enabled: true, threshold: '1000', amount: 1000, monthly_cap: 2500 });
    await spend(1);
    await waitFor(async () => intents().length, (count) => count === 2, 'the second recharge');
    await waitFor(async () => (await tg.store.payments.listOrders({ accountId: annId, kind: 'auto_recharge', status: 'paid' })).length, (paid) => paid === 2, 'its credit');
    await spend(1);
    await waitFor(() => rechargeOutcomes('capped'), (count) => count === 1, 'the cap to refuse a recharge');
    const capped = await tg.store.payments.listOrders({ accountId: annId, kind: 'auto_recharge' });
    expect(capped.map((order) => order.status)).to.deep.equal(['paid', 'paid']);
    expect(intents()).to.have.length(2);
  });

  it('turns itself off after three failures in a row, saying why, until turned on again', async () => {
    stripe.intentOutcome = 'declined';
    await settings({ enabled: true, threshold: '1000', amount: 1000, monthly_cap: 100000 });
    for (let failure = 1; failure <= 3; failure++) {
      await spend(1);
      await waitFor(async () => (await tg.store.payments.profile(annId))!.failures, (failures) => failures === failure, `failure ${failure}`);
    }
    const view = (await ann.get('/api/payments/auto-recharge')).body.auto_recharge;
    expect(view).to.deep.include({ enabled: false, failures: 3, last_error: 'Your card was declined.', needs_action: false });
    expect(await rechargeOutcomes('turned_off')).to.equal(1);
    const calls = intents().length;
    await spend(1);
    expect(intents()).to.have.length(calls);
    const audit = await tg.store.listAudit({ target: annId, action: 'payment.settings' });
    expect(audit[0]).to.deep.include({ actor: 'auto-recharge', surface: 'server' });
    expect(audit[0].after).to.deep.include({ auto_recharge: false, failures: 3 });
  });

  it('says when the card needs its holder to confirm the payment', async () => {
    stripe.intentOutcome = 'requires_action';
    expect(await settings({ enabled: true, threshold: '1000', amount: 1000, monthly_cap: 100000 })).to.deep.include({ enabled: true, failures: 0 });
    await spend(1);
    await waitFor(async () => (await ann.get('/api/payments/auto-recharge')).body.auto_recharge, (view) => view.needs_action === true, 'needs_action');
    const view = (await ann.get('/api/payments/auto-recharge')).body.auto_recharge;
    expect(view.last_error).to.match(/confirm/);
    expect(view.failures).to.equal(1);
  });
});
