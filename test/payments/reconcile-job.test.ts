/**
 * The background reconcile job: old pending orders are looked up in Stripe without anyone asking,
 * credited if paid, expired in Stripe and here if still open; of two jobs on one store only the
 * lease holder works. Run with a one-second interval and no minimum age, so it needs no minutes.
 */
import { expect } from 'chai';
import pino from 'pino';
import { Registry } from 'prom-client';
import { StoreBook } from '../../src/billing/store-book';
import { unitsToNano } from '../../src/billing/money';
import { parseConfig } from '../../src/config/load';
import type { StripeConfig } from '../../src/config/types';
import { PaymentMetrics } from '../../src/metrics/payment-metrics';
import { Payments } from '../../src/payments/payments';
import { startReconcileJob } from '../../src/payments/reconcile-job';
import { SqliteStore } from '../../src/store/sqlite';
import { waitFor } from '../admin/fixtures';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';

describe('payments: the background reconcile job', function () {
  this.timeout(20_000);

  it('credits the paid, expires the open, and runs on one instance at a time', async () => {
    const stripe = await FakeStripe.start();
    const store = new SqliteStore(':memory:');
    await store.migrate();
    const jobs: { stop(): void }[] = [];
    try {
      const parsed = parseConfig(
        `providers: {echo: {protocol: echo}}\nmodels: {m: {family: openai, routes: [{provider: echo}], free: true}}\npayments: {stripe: {secret_key: ${SECRET_KEY}, webhook_secret: ${WEBHOOK_SECRET}, currency: usd, api_base: "${stripe.url}"}}\n`,
        'job.yaml',
        {},
      ).payments.stripe!;
      const config: StripeConfig = { ...parsed, reconcile_interval_seconds: 1, pending_expiry_minutes: 0 };
      const book = new StoreBook(store);
      const account = await store.createAccount({ name: 'fay', role: 'user' });
      const logger = pino({ level: 'silent' });
      const made = () => new Payments({ store, funds: book, logger, metrics: new PaymentMetrics(new Registry()), config: () => config });
      const payments = made();
      const paid = await payments.checkout(account, 1000, { returnBase: 'http://127.0.0.1', saveCard: false, actor: 'fay', surface: 'console', requestId: null });
      const open = await payments.checkout(account, 2000, { returnBase: 'http://127.0.0.1', saveCard: false, actor: 'fay', surface: 'console', requestId: null });
      stripe.complete(paid.order.sessionId!);

      jobs.push(startReconcileJob(made(), store, () => config, logger), startReconcileJob(made(), store, () => config, logger));
      await waitFor(async () => (await store.payments.findOrder(open.order.id))!.status, (status) => status === 'expired', 'the open order to expire', 5000);
      await waitFor(async () => (await store.payments.findOrder(paid.order.id))!.status, (status) => status === 'paid', 'the paid order to be credited', 5000);
      expect((await store.balance(account.id)).balance).to.equal(unitsToNano('10'));
      expect(stripe.sessions.get(open.order.sessionId!)!.status).to.equal('expired');
      // One job looked each session up: the other found the lease taken.
      expect(stripe.calls('GET', `/v1/checkout/sessions/${open.order.sessionId!}`)).to.have.length(1);
      expect(stripe.calls('POST', `/v1/checkout/sessions/${open.order.sessionId!}/expire`)).to.have.length(1);
    } finally {
      jobs.forEach((job) => job.stop());
      await store.close();
      await stripe.close();
    }
  });
});
