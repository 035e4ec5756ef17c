/**
 * Card payments end to end against a fake of Stripe's API: the amount shown, asked of Stripe and
 * credited is one figure; each order is credited at most once whatever webhooks arrive, twice, out of
 * order or at two instances at once; bad signatures credit nothing; refunds and disputes take back
 * their share; a webhook lost while Tollgate was down is found by reconciliation; Stripe unreachable
 * leaves nothing credited and nothing pending. Run on SQLite (one instance) and on PostgreSQL with
 * Redis (two instances), and `tollgate ledger verify` holds after each.
 */
import { expect } from 'chai';
import { createServer } from 'node:net';
import { unitsToNano } from '../../src/billing/money';
import { verifyLedgerCommand } from '../../src/cli/ledger';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import { ApiClient, expectError } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances } from '../helpers/shared-instances';
import { startTestGateway } from '../helpers/test-gateway';

/** 1.25 balance units per dollar: a rate that is not an integer, so every credit below tests it. */
function paymentsYaml(apiBase: string): string {
  return `
payments:
  stripe:
    secret_key: ${SECRET_KEY}
    webhook_secret: ${WEBHOOK_SECRET}
    currency: usd
    min_amount: 500
    max_amount: 100000
    presets: [1000, 2500]
    units_per_currency_unit: 1.25
    api_base: ${apiBase}
    reconcile_interval_seconds: 0
    timeout_ms: 2000
`;
}

interface Rig {
  readonly gateways: readonly Gateway[];
  readonly store: Store;
  readonly fake: FakeStripe;
  close(): Promise<void>;
}

async function sqliteRig(): Promise<Rig> {
  const fake = await FakeStripe.start();
  const tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') + paymentsYaml(fake.url) });
  return { gateways: [tg.gateway], store: tg.store, fake, close: async () => (await tg.stop(), await fake.close()) };
}

async function postgresRig(): Promise<Rig | { problem: string }> {
  const fake = await FakeStripe.start();
  const started = await startSharedInstances('payments', (upstream, storeUrl, prefix) => {
    const local = 'store: { url: "sqlite::memory:" }';
    return (consoleYaml(upstream) + paymentsYaml(fake.url)).replace(local, `store: { url: "${storeUrl}" }\nredis: { url: "${REDIS_URL}", key_prefix: "${prefix}" }`);
  });
  if ('problem' in started) {
    await fake.close();
    return started;
  }
  return { gateways: started.gateways, store: started.store, fake, close: async () => (await started.close(), await fake.close()) };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function webhookSuite(name: string, start: () => Promise<Rig | { problem: string }>): void {
  describe(`card payments through Stripe (${name})`, function () {
    this.timeout(30_000);
    let rig: Rig;
    let ann: ApiClient;
    let annId: string;
    let admin: ApiClient;
    /** The webhook endpoint of each instance. */
    let hooks: string[];

    before(async function () {
      const started = await start();
      if ('problem' in started) {
        console.log(`      ${started.problem}: suite skipped`);
        this.skip();
      }
      rig = started;
      await passwordHash();
      annId = (await addAccount(rig.store, 'ann', 'user', 'ann@example.com')).id;
      await addAccount(rig.store, 'root', 'admin');
      ann = await ApiClient.login(rig.gateways[0].url, 'ann', PASSWORD);
      admin = await ApiClient.login(rig.gateways[0].url, 'root', PASSWORD);
      hooks = rig.gateways.map((gateway) => `${gateway.url}/api/payments/stripe/webhook`);
    });

    after(async () => rig?.close());

    afterEach(async function () {
      if (rig === undefined) return;
      const lines: string[] = [];
      const { drifted } = await verifyLedgerCommand(rig.store, (line) => lines.push(line));
      expect(drifted, lines.join('\n')).to.equal(0);
    });

    async function balance(): Promise<bigint> {
      return (await rig.store.balance(annId)).balance;
    }

    /** A checkout of `amount` for ann, and the session the fake made for it. */
    async function checkout(amount: number | string) {
      const answer = await ann.post('/api/payments/checkout', { amount });
      expect(answer.status, answer.text).to.equal(201);
      const session = rig.fake.sessions.get(new URL(answer.body.url).pathname.split('/').pop()!)!;
      return { orderId: answer.body.order_id as string, session, order: answer.body.order };
    }

    /** Delivers one event to every instance at once. */
    async function deliverEverywhere(event: object): Promise<number[]> {
      return (await Promise.all(hooks.map((hook) => rig.fake.deliver(hook, event)))).map((answer) => answer.status);
    }

    it('offers the presets with what each credits, and prices the session from the amount alone', async () => {
      const options = await ann.get('/api/payments/options');
      expect(options.body).to.deep.include({ enabled: true, currency: 'usd', units_per_currency_unit: '1.25' });
      expect(options.body.presets).to.deep.equal([
        { amount_minor: 1000, amount: '10.00', credit: '12.5' },
        { amount_minor: 2500, amount: '25.00', credit: '31.25' },
      ]);
      expect(options.body.min).to.deep.equal({ amount_minor: 500, amount: '5.00', credit: '6.25' });

      const { orderId, session, order } = await checkout('10.55');
      expect(order).to.deep.include({ status: 'pending', amount: '10.55', amount_minor: 1055, credit: '13.1875' });
      const asked = rig.fake.calls('POST', '/v1/checkout/sessions').at(-1)!;
      expect(asked.body.line_items[0].price_data).to.deep.include({ currency: 'usd', unit_amount: '1055' });
      expect(asked.body).to.deep.include({ mode: 'payment', client_reference_id: orderId });
      expect(asked.body.metadata).to.deep.equal({ tollgate_order: orderId });
      expect(asked.body.payment_intent_data.receipt_email).to.equal('ann@example.com');
      expect(asked.body.success_url).to.match(/\/console\/payments\?order=pay_/);
      expect(asked.idempotencyKey).to.equal(`tollgate-checkout-${orderId}`);
      expect(session.amount_total).to.equal(1055);

      const before = await balance();
      rig.fake.complete(session.id);
      expect(await deliverEverywhere(rig.fake.event('checkout.session.completed', session))).to.satisfy((all: number[]) => all.every((s) => s === 200));
      expect((await balance()) - before).to.equal(unitsToNano('13.1875'));
      const listed = await ann.get('/api/payments');
      const paid = listed.body.payments.find((p: { id: string }) => p.id === orderId);
      expect(paid).to.deep.include({ status: 'paid', amount: '10.55', credit: '13.1875' });
      expect(paid.receipt_url).to.match(/\/receipts\/ch_/);
    });

    it('takes the minimum and the maximum and refuses one minor unit past either, or more decimals than the currency has', async () => {
      const before = await balance();
      for (const [amount, credit] of [[500, '6.25'], [100000, '1250']] as const) {
        const { session, order } = await checkout(amount);
        expect(order.credit).to.equal(credit);
        rig.fake.complete(session.id);
        expect((await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session))).status).to.equal(200);
      }
      expect((await balance()) - before).to.equal(unitsToNano('1256.25'));
      for (const amount of [499, 100001, '10.555', -600, 'ten', 12.5]) {
        expectError(await ann.post('/api/payments/checkout', { amount }), 400, 'invalid_request', 'amount');
      }
    });

    it('credits once when the same event comes twice, concurrently at every instance and again later', async () => {
      const { orderId, session } = await checkout(1000);
      rig.fake.complete(session.id);
      const event = rig.fake.event('checkout.session.completed', session);
      const before = await balance();
      const statuses = await Promise.all([...hooks, ...hooks].map((hook) => rig.fake.deliver(hook, event)));
      expect(statuses.map((answer) => answer.status)).to.deep.equal(statuses.map(() => 200));
      expect((await rig.fake.deliver(hooks[0], event)).body).to.deep.include({ duplicate: true });
      expect((await balance()) - before).to.equal(unitsToNano('12.5'));
      const credits = (await rig.store.listCredits(annId)).filter((credit) => credit.note?.includes(orderId));
      expect(credits).to.have.length(1);
      expect(credits[0]).to.deep.include({ kind: 'topup', actor: 'stripe', amount: unitsToNano('12.5') });
    });

    it('credits once for completed (paid) then async_payment_succeeded, each a different event, sent to every instance', async () => {
      const { session } = await checkout(2500);
      rig.fake.complete(session.id);
      const before = await balance();
      await Promise.all([
        deliverEverywhere(rig.fake.event('checkout.session.completed', session)),
        deliverEverywhere(rig.fake.event('checkout.session.async_payment_succeeded', session)),
      ]);
      expect((await balance()) - before).to.equal(unitsToNano('31.25'));
    });

    it('credits nothing while the session is complete but unpaid, then once at the async success', async () => {
      const { orderId, session } = await checkout(1000);
      rig.fake.complete(session.id, 'unpaid');
      const before = await balance();
      expect(await deliverEverywhere(rig.fake.event('checkout.session.completed', session))).to.satisfy((all: number[]) => all.every((s) => s === 200));
      expect(await balance()).to.equal(before);
      expect((await rig.store.payments.findOrder(orderId))!.status).to.equal('pending');
      rig.fake.succeedAsync(session.id);
      await deliverEverywhere(rig.fake.event('checkout.session.async_payment_succeeded', session));
      expect((await balance()) - before).to.equal(unitsToNano('12.5'));
      // A late failure or expiry of a credited order changes nothing.
      await deliverEverywhere(rig.fake.event('checkout.session.expired', session));
      expect((await rig.store.payments.findOrder(orderId))!.status).to.equal('paid');
    });

    it('marks an async failure and an expiry without crediting', async () => {
      const failed = await checkout(1000);
      rig.fake.complete(failed.session.id, 'unpaid');
      const expired = await checkout(1000);
      const before = await balance();
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.async_payment_failed', failed.session));
      expired.session.status = 'expired';
      await rig.fake.deliver(hooks.at(-1)!, rig.fake.event('checkout.session.expired', expired.session));
      expect(await balance()).to.equal(before);
      expect((await rig.store.payments.findOrder(failed.orderId))!.status).to.equal('failed');
      expect((await rig.store.payments.findOrder(expired.orderId))!.status).to.equal('expired');
      const audit = await rig.store.listAudit({ target: failed.orderId });
      expect(audit.map((entry) => entry.action)).to.include.members(['payment.create', 'payment.failed']);
    });

    it('refuses a stale signature and a re-serialised body with 400, crediting nothing', async () => {
      const { orderId, session } = await checkout(1000);
      rig.fake.complete(session.id);
      const event = rig.fake.event('checkout.session.completed', session);
      const before = await balance();
      const stale = await rig.fake.deliver(hooks[0], event, { timestamp: Math.floor(Date.now() / 1000) - 600 });
      expect(stale.status).to.equal(400);
      expect(stale.body.error.code).to.equal('invalid_request');
      // The same JSON, serialised differently: the signature covers the exact bytes.
      const reserialised = await rig.fake.deliver(hooks[0], event, { body: JSON.stringify(event) });
      expect(reserialised.status).to.equal(400);
      const unsigned = await fetch(hooks[0], { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) });
      expect(unsigned.status).to.equal(400);
      expect(await balance()).to.equal(before);
      expect((await rig.store.payments.findOrder(orderId))!.status).to.equal('pending');
      expect(await rig.store.payments.seenEvent(event.id)).to.equal(false);
    });

    it('debits a partial refund, then the rest, once each, even below zero', async () => {
      const { orderId, session } = await checkout(2000);
      rig.fake.complete(session.id);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session));
      const before = await balance();
      const partial = rig.fake.event('charge.refunded', rig.fake.refundedCharge(session.payment_intent, 500));
      await deliverEverywhere(partial);
      await deliverEverywhere(partial);
      expect(before - (await balance())).to.equal(unitsToNano('6.25'));
      // Spend it all and more: the full refund still takes the rest.
      const spent = await balance();
      await rig.store.payments.refundOrder(orderId, 500, 'test:noop'); // same cumulative figure: takes nothing
      expect(await balance()).to.equal(spent);
      await deliverEverywhere(rig.fake.event('charge.refunded', rig.fake.refundedCharge(session.payment_intent, 2000)));
      expect(before - (await balance())).to.equal(unitsToNano('25'));
      const order = await admin.get(`/api/admin/payments?account=ann`);
      expect(order.body.payments.find((p: { id: string }) => p.id === orderId)).to.deep.include({ refunded: '20.00', status: 'paid', account_name: 'ann' });
      for (const debit of order.body.debits) expect(debit).to.include({ account_name: 'ann' });
      expect(order.body.debits.filter((d: { order_id: string }) => d.order_id === orderId).map((d: { amount: string }) => d.amount).sort()).to.deep.equal(['18.75', '6.25']);
    });

    it('debits a dispute and flags the account', async () => {
      const { orderId, session } = await checkout(1000);
      rig.fake.complete(session.id);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session));
      const before = await balance();
      const event = rig.fake.event('charge.dispute.created', rig.fake.dispute(session.payment_intent, 1000));
      await deliverEverywhere(event);
      expect(before - (await balance())).to.equal(unitsToNano('12.5'));
      const profile = await rig.store.payments.profile(annId);
      expect(profile!.flaggedAt).to.be.instanceOf(Date);
      expect(profile!.flagReason).to.equal('fraudulent');
      expect((await ann.get('/api/payments')).body.flagged).to.equal(true);
      expect((await rig.store.payments.findOrder(orderId))!.disputed).to.equal(true);
      expect((await rig.store.listAudit({ target: orderId })).map((entry) => entry.action)).to.include('payment.dispute');
    });

    /** A checkout of `amount`, complete (paid) at Stripe, its webhook not delivered yet. */
    async function paidAtStripe(amount: number) {
      const made = await checkout(amount);
      rig.fake.complete(made.session.id);
      return made;
    }

    it('a full refund that arrives before the payment leaves nothing credited, by webhook or by reconciliation', async () => {
      const before = await balance();
      const { orderId, session } = await paidAtStripe(2000);
      expect((await rig.fake.deliver(hooks[0], rig.fake.event('charge.refunded', rig.fake.refundedCharge(session.payment_intent, 2000)))).status).to.equal(200);
      await deliverEverywhere(rig.fake.event('checkout.session.completed', session));
      expect(await balance()).to.equal(before);
      expect((await rig.store.payments.findOrder(orderId))!.status).to.equal('paid');
      // The same through reconciliation: a partial refund first, then Stripe says paid.
      const other = await paidAtStripe(2000);
      await rig.fake.deliver(hooks[0], rig.fake.event('charge.refunded', rig.fake.refundedCharge(other.session.payment_intent, 500)));
      await admin.post('/api/admin/payments/reconcile', {});
      const credits = (await rig.store.listCredits(annId)).filter((credit) => credit.note?.includes(other.orderId));
      expect(credits.map((credit) => credit.amount)).to.deep.equal([unitsToNano('18.75')]);
    });

    it('a dispute that arrives before the payment is taken from the credit', async () => {
      const before = await balance();
      const { session } = await paidAtStripe(1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('charge.dispute.created', rig.fake.dispute(session.payment_intent, 1000)));
      await deliverEverywhere(rig.fake.event('checkout.session.completed', session));
      expect(await balance()).to.equal(before);
    });

    it('a dispute then a refund of one 10.00 order debits 10.00 once, and a won dispute gives back what is left', async () => {
      const { orderId, session } = await paidAtStripe(1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session));
      const before = await balance();
      const dispute = rig.fake.dispute(session.payment_intent, 1000);
      await deliverEverywhere(rig.fake.event('charge.dispute.created', dispute));
      await deliverEverywhere(rig.fake.event('charge.refunded', rig.fake.refundedCharge(session.payment_intent, 1000)));
      expect(before - (await balance())).to.equal(unitsToNano('12.5'));
      // Won after a full refund: the refund would have taken it all, so nothing comes back.
      await deliverEverywhere(rig.fake.event('charge.dispute.closed', { ...dispute, status: 'won' }));
      expect(before - (await balance())).to.equal(unitsToNano('12.5'));
      expect((await rig.store.payments.listDebits(annId)).filter((debit) => debit.orderId === orderId)).to.have.length(1);
    });

    it('a won dispute is given back as a dispute_won credit, once', async () => {
      const { orderId, session } = await paidAtStripe(1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session));
      const before = await balance();
      const dispute = rig.fake.dispute(session.payment_intent, 1000);
      await deliverEverywhere(rig.fake.event('charge.dispute.created', dispute));
      expect(before - (await balance())).to.equal(unitsToNano('12.5'));
      await deliverEverywhere(rig.fake.event('charge.dispute.closed', { ...dispute, status: 'won' }));
      await deliverEverywhere(rig.fake.event('charge.dispute.closed', { ...dispute, status: 'won' }));
      expect(await balance()).to.equal(before);
      const given = (await rig.store.listCredits(annId)).filter((credit) => credit.kind === 'dispute_won' && credit.note?.includes(orderId));
      expect(given.map((credit) => credit.amount)).to.deep.equal([unitsToNano('12.5')]);
      // Lost: what it took stays taken.
      const lost = await paidAtStripe(1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', lost.session));
      const lostDispute = rig.fake.dispute(lost.session.payment_intent, 1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('charge.dispute.created', lostDispute));
      await rig.fake.deliver(hooks[0], rig.fake.event('charge.dispute.closed', { ...lostDispute, status: 'lost' }));
      expect(await balance()).to.equal(before);
    });

    it('of twenty copies of one event delivered at once, one is handled and nineteen are duplicates', async () => {
      const { session } = await paidAtStripe(1000);
      const event = rig.fake.event('checkout.session.completed', session);
      const before = await balance();
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => rig.fake.deliver(hooks[i % hooks.length], event)));
      expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
      expect(answers.filter((answer) => answer.body.duplicate === false)).to.have.length(1);
      expect((await balance()) - before).to.equal(unitsToNano('12.5'));
    });

    it('a signed refund whose amount is not a number answers 400, moves nothing, and its corrected retry is handled', async () => {
      const { orderId, session } = await paidAtStripe(1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session));
      const before = await balance();
      const event = rig.fake.event('charge.refunded', { ...rig.fake.refundedCharge(session.payment_intent, 1000), amount_refunded: 'abc' });
      const answer = await rig.fake.deliver(hooks[0], event);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(400);
      expect(answer.body.error.code).to.equal('invalid_request');
      expect(answer.body.error.message).to.match(/amount_refunded/);
      expect(await balance()).to.equal(before);
      expect(await rig.store.payments.seenEvent(event.id)).to.equal(false);
      // Negative, fractional or a number written as a string: refused alike, for refunds and disputes.
      for (const bad of [-500, 10.5, '1000', null]) {
        const refund = rig.fake.event('charge.refunded', { ...rig.fake.refundedCharge(session.payment_intent, 1000), amount_refunded: bad });
        const dispute = rig.fake.event('charge.dispute.created', { ...rig.fake.dispute(session.payment_intent, 1000), amount: bad });
        for (const [malformed, field] of [[refund, 'amount_refunded'], [dispute, 'amount']] as const) {
          const refused = await rig.fake.deliver(hooks[0], malformed);
          expect(refused.status, `${field}: ${JSON.stringify(bad)}`).to.equal(400);
          expect(refused.body.error.message).to.include(field);
          expect(await rig.store.payments.seenEvent(malformed.id)).to.equal(false);
        }
      }
      expect(await balance()).to.equal(before);
      expect((await rig.store.payments.findOrder(orderId))!).to.deep.include({ refundedMinor: 0, disputed: false });
      event.data.object.amount_refunded = 1000;
      expect((await rig.fake.deliver(hooks[0], event)).body).to.deep.include({ duplicate: false });
      expect(before - (await balance())).to.equal(unitsToNano('12.5'));
    });

    it('a refund or dispute in another currency than its order is refused: recorded with nothing moved, audited, and not sent again', async () => {
      // Answered 200, not 400: the event never changes, so a 400 would have Stripe retry it for days.
      const { orderId, session } = await paidAtStripe(1000);
      await rig.fake.deliver(hooks[0], rig.fake.event('checkout.session.completed', session));
      const before = await balance();
      const refundEvent = rig.fake.event('charge.refunded', { ...rig.fake.refundedCharge(session.payment_intent, 1000), currency: 'eur' });
      const refund = await rig.fake.deliver(hooks[0], refundEvent);
      expect(refund.status, JSON.stringify(refund.body)).to.equal(200);
      expect(refund.body).to.deep.include({ duplicate: false, ignored: 'currency_mismatch' });
      const disputeEvent = rig.fake.event('charge.dispute.created', { ...rig.fake.dispute(session.payment_intent, 1000), currency: 'jpy' });
      const dispute = await rig.fake.deliver(hooks[0], disputeEvent);
      expect(dispute.status, JSON.stringify(dispute.body)).to.equal(200);
      expect(dispute.body).to.deep.include({ duplicate: false, ignored: 'currency_mismatch' });
      for (const event of [refundEvent, disputeEvent]) expect((await rig.fake.deliver(hooks[hooks.length - 1], event)).body).to.deep.include({ duplicate: true });
      expect(await balance()).to.equal(before);
      const order = (await rig.store.payments.findOrder(orderId))!;
      expect(order).to.deep.include({ refundedMinor: 0, disputed: false });
      const refused = (await rig.store.listAudit({ target: orderId })).filter((entry) => entry.after?.refused === 'currency_mismatch');
      expect(refused.map((entry) => [entry.action, entry.after?.currency])).to.have.deep.members([
        ['payment.refund', 'eur'],
        ['payment.dispute', 'jpy'],
      ]);
    });

    it('a copy that comes while another handler holds the event answers 409 and moves nothing; once handled, it is a duplicate', async () => {
      const { session } = await paidAtStripe(1000);
      const event = rig.fake.event('checkout.session.completed', session);
      const before = await balance();
      // Another instance claimed it 30 s ago and is still at it (or died less than 60 s ago).
      const heldSince = new Date(Date.now() - 30_000);
      expect(await rig.store.payments.claimEvent(event.id, event.type, heldSince, new Date(heldSince.getTime() - 60_000))).to.equal('claimed');
      const copy = await rig.fake.deliver(hooks[0], event);
      expect(copy.status, JSON.stringify(copy.body)).to.equal(409);
      expect(copy.body.error.code).to.equal('conflict');
      expect(await balance()).to.equal(before);
      // That handler finishes: Stripe's next retry is a duplicate, and nothing more is credited.
      await rig.store.payments.finishEvent(event.id, null, new Date());
      expect((await rig.fake.deliver(hooks[hooks.length - 1], event)).body).to.deep.include({ duplicate: true });
      expect(await balance()).to.equal(before);
    });

    it('an event whose handler claimed it over 60 s ago and never finished is taken over and handled once', async () => {
      const { orderId, session } = await paidAtStripe(1000);
      const event = rig.fake.event('checkout.session.completed', session);
      const before = await balance();
      const died = new Date(Date.now() - 61_000);
      expect(await rig.store.payments.claimEvent(event.id, event.type, died, new Date(died.getTime() - 60_000))).to.equal('claimed');
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => rig.fake.deliver(hooks[i % hooks.length], event)));
      expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
      expect(answers.filter((answer) => answer.body.duplicate === false)).to.have.length(1);
      expect((await balance()) - before).to.equal(unitsToNano('12.5'));
      expect((await rig.store.payments.findOrder(orderId))!.status).to.equal('paid');
    });

    it('makes one auto-recharge order of twenty asked at once, and none past the monthly cap', async () => {
      const bo = await addAccount(rig.store, `bo-${name.length}`);
      const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
      const ask = () => rig.store.payments.createRechargeOrder({ accountId: bo.id, currency: 'usd', amountMinor: 1000, creditAmount: unitsToNano('12.5') }, monthStart, 2500);
      const made = await Promise.all(Array.from({ length: 20 }, ask));
      const orders = made.filter((result) => !('refused' in result));
      expect(orders).to.have.length(1);
      expect(made.filter((result) => 'refused' in result && result.refused === 'in_flight')).to.have.length(19);
      const first = orders[0] as { id: string };
      await rig.store.payments.creditOrder(first.id, {});
      expect(await ask()).to.not.have.property('refused');
      const pending = await rig.store.payments.listOrders({ accountId: bo.id, status: 'pending' });
      await rig.store.payments.creditOrder(pending[0].id, {});
      expect(await ask()).to.deep.equal({ refused: 'monthly_cap' });
      expect((await rig.store.balance(bo.id)).balance).to.equal(unitsToNano('25'));
    });

    it('reconciles a webhook that never came: credited once, however often it runs', async () => {
      const { orderId, session } = await checkout(1000);
      rig.fake.complete(session.id);
      const open = await checkout(1000);
      // Earlier cases left paid sessions whose webhooks were refused (bad signatures): Stripe says paid, so they count too.
      const paidInStripe = (await rig.store.payments.listOrders({ accountId: annId, status: 'pending' })).filter(
        (order) => rig.fake.sessions.get(order.sessionId!)?.payment_status === 'paid',
      );
      expect(paidInStripe.map((order) => order.id)).to.include(orderId);
      const before = await balance();
      const first = await admin.post('/api/admin/payments/reconcile', {});
      expect(first.status, first.text).to.equal(200);
      expect(first.body).to.deep.include({ credited: paidInStripe.length, errors: [] });
      expect(first.body.pending).to.be.at.least(1);
      expect((await admin.post('/api/admin/payments/reconcile', {})).body).to.deep.include({ credited: 0 });
      // The webhook arrives late after all: nothing more.
      await deliverEverywhere(rig.fake.event('checkout.session.completed', session));
      expect((await balance()) - before).to.equal(paidInStripe.reduce((sum, order) => sum + order.creditAmount, 0n));
      expect((await rig.store.payments.findOrder(orderId))!.status).to.equal('paid');
      expect((await rig.store.payments.findOrder(open.orderId))!.status).to.equal('pending');
    });
  });
}

webhookSuite('SQLite, one instance', sqliteRig);
webhookSuite('PostgreSQL and Redis, two instances', postgresRig);

describe('card payments: Stripe unreachable', function () {
  this.timeout(20_000);

  it('answers 503 at checkout, credits nothing and leaves no order pending', async () => {
    const port = await closedPort();
    const tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') + paymentsYaml(`http://127.0.0.1:${port}`) });
    try {
      await passwordHash();
      const bob = await addAccount(tg.store, 'bob');
      const client = await ApiClient.login(tg.url, 'bob', PASSWORD);
      const answer = await client.post('/api/payments/checkout', { amount: 1000 });
      expectError(answer, 503, 'unavailable');
      expect(answer.body.error.message).to.match(/Stripe/);
      expect((await tg.store.balance(bob.id)).balance).to.equal(0n);
      const orders = await tg.store.payments.listOrders({ accountId: bob.id });
      expect(orders.map((order) => [order.status, order.error?.startsWith('Stripe could not be reached')])).to.deep.equal([['failed', true]]);
    } finally {
      await tg.stop();
    }
  });

  it('without payments.stripe the endpoints say card payments are off', async () => {
    const tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') });
    try {
      await passwordHash();
      await addAccount(tg.store, 'cy');
      const client = await ApiClient.login(tg.url, 'cy', PASSWORD);
      expect((await client.get('/api/payments/options')).body).to.deep.equal({ enabled: false });
      expectError(await client.post('/api/payments/checkout', { amount: 1000 }), 404, 'not_found');
    } finally {
      await tg.stop();
    }
  });
});
