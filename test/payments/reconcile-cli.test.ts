/**
 * A webhook lost while Tollgate was down: the order stays pending, `tollgate payments reconcile` asks
 * Stripe and credits it once however often it runs, and the webhook that arrives after all changes
 * nothing. On a store file shared by the gateway and the CLI, as an operator runs them.
 */
import { expect } from 'chai';
import { appendFileSync, rmSync } from 'node:fs';
import { unitsToNano } from '../../src/billing/money';
import { runCli } from '../../src/cli';
import { ApiClient } from '../admin/api-client';
import { addAccount, PASSWORD, passwordHash } from '../admin/fixtures';
import { makeCliFolder } from '../helpers/cli-config';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';
import { startTestGateway } from '../helpers/test-gateway';

describe('tollgate payments reconcile', function () {
  this.timeout(20_000);
  let fake: FakeStripe;
  let folder: ReturnType<typeof makeCliFolder>;

  before(async () => {
    fake = await FakeStripe.start();
    folder = makeCliFolder('tollgate-payments-');
    appendFileSync(
      folder.configFile,
      `payments: {stripe: {secret_key: ${SECRET_KEY}, webhook_secret: ${WEBHOOK_SECRET}, currency: eur, units_per_currency_unit: 0.9, api_base: "${fake.url}", reconcile_interval_seconds: 0}}\n`,
    );
  });

  after(async () => {
    await fake.close();
    rmSync(folder.dir, { recursive: true, force: true });
  });

  async function cli(...argv: string[]): Promise<{ status: number; lines: string[] }> {
    const lines: string[] = [];
    const status = await runCli([...argv, '--config', folder.configFile], { out: (line) => lines.push(line), err: (line) => lines.push(line), env: { USER: 'ops' }, cwd: folder.dir });
    return { status, lines };
  }

  it('credits a payment whose webhook was lost once, however often it runs, and the late webhook adds nothing', async () => {
    let tg = await startTestGateway({ configFile: folder.configFile, storeFromConfig: true });
    await passwordHash();
    const dora = await addAccount(tg.store, 'dora');
    const client = await ApiClient.login(tg.url, 'dora', PASSWORD);
    const answer = await client.post('/api/payments/checkout', { amount: '12.34' });
    expect(answer.status, answer.text).to.equal(201);
    expect(answer.body.order).to.deep.include({ amount: '12.34', credit: '11.106' });
    await tg.stop();

    // Paid while the gateway was down: the webhook never arrived.
    const session = fake.complete(new URL(answer.body.url).pathname.split('/').pop()!);
    for (let run = 0; run < 2; run++) {
      const { status, lines } = await cli('payments', 'reconcile');
      expect(status, lines.join('\n')).to.equal(0);
      expect(lines[0]).to.equal(run === 0 ? 'checked 1 pending payments: 1 credited, 0 failed, 0 expired, 0 still pending' : 'checked 0 pending payments: 0 credited, 0 failed, 0 expired, 0 still pending');
    }
    const verify = await cli('ledger', 'verify');
    expect(verify.status, verify.lines.join('\n')).to.equal(0);

    tg = await startTestGateway({ configFile: folder.configFile, storeFromConfig: true });
    try {
      expect((await tg.store.balance(dora.id)).balance).to.equal(unitsToNano('11.106'));
      const late = await fake.deliver(`${tg.url}/api/payments/stripe/webhook`, fake.event('checkout.session.completed', session));
      expect(late.status).to.equal(200);
      expect((await tg.store.balance(dora.id)).balance).to.equal(unitsToNano('11.106'));
      expect((await tg.store.listCredits(dora.id)).map((credit) => credit.amount)).to.deep.equal([unitsToNano('11.106')]);
    } finally {
      await tg.stop();
    }
  });

  it('says so, and exits 1, when Stripe cannot be asked', async () => {
    const tg = await startTestGateway({ configFile: folder.configFile, storeFromConfig: true });
    try {
      await addAccount(tg.store, 'eve');
      const client = await ApiClient.login(tg.url, 'eve', PASSWORD);
      expect((await client.post('/api/payments/checkout', { amount: 1000 })).status).to.equal(201);
    } finally {
      await tg.stop();
    }
    await fake.close();
    try {
      const { status, lines } = await cli('payments', 'reconcile');
      expect(status).to.equal(1);
      expect(lines[0]).to.match(/^checked 1 pending payments: 0 credited/);
      expect(lines[1]).to.match(/^ERROR {2}pay_[0-9a-f]{16}: /);
    } finally {
      fake = await FakeStripe.start();
    }
  });
});
