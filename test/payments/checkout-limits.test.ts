/**
 * Checkouts within bounds, against the fake Stripe: at most `payments.stripe.max_pending_checkouts`
 * (default 5) wait for payment per account, counted with the write so concurrent checkouts never pass
 * it (on SQLite, and on PostgreSQL where two instances share the store); the next is a 409 saying
 * why, and a paid one makes room. Without `server.public_url`, Stripe's return addresses are built on
 * the listen address gateway.yaml names, never on a Host or X-Forwarded-Host the client sent.
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { ApiClient, expectError } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';
import { FakeStripe, SECRET_KEY, WEBHOOK_SECRET } from '../helpers/fake-stripe';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

function stripeYaml(apiBase: string, extra = ''): string {
  return `
payments:
  stripe: { secret_key: ${SECRET_KEY}, webhook_secret: ${WEBHOOK_SECRET}, currency: usd, api_base: "${apiBase}", reconcile_interval_seconds: 0${extra} }
`;
}

/** A POST sent with exactly these headers (fetch will not send a Host of our choosing). */
function rawPost(base: string, path: string, headers: Record<string, string>, body: object): Promise<{ status: number; body: any }> {
  const url = new URL(path, base);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

for (const backend of ['SQLite', 'PostgreSQL'] as const) {
  describe(`card payments: pending checkouts per account (${backend})`, function () {
    this.timeout(30_000);
    let stripe: FakeStripe;
    let tg: TestGateway;
    let database: TestDatabase | null = null;
    let accounts = 0;

    before(async function () {
      if (backend === 'PostgreSQL') {
        const problem = await postgresProblem();
        if (problem !== null) {
          console.log(`      ${problem}: the PostgreSQL run skipped`);
          this.skip();
        }
        database = await createTestDatabase();
      }
      stripe = await FakeStripe.start();
      const yaml = consoleYaml('http://127.0.0.1:9') + stripeYaml(stripe.url);
      tg = await startTestGateway({
        yaml: database === null ? yaml : yaml.replace('store: { url: "sqlite::memory:" }', `store: { url: "${database.url}" }`),
        storeFromConfig: true,
      });
      await passwordHash();
    });

    after(async () => {
      await tg?.stop();
      await stripe?.close();
      await database?.drop();
    });

    async function signedIn(): Promise<{ client: ApiClient; id: string }> {
      accounts += 1;
      const name = `cora-${accounts}`;
      const id = (await addAccount(tg.store, name)).id;
      return { client: await ApiClient.login(tg.url, name, PASSWORD), id };
    }

    it('takes five pending checkouts (the default), refuses the sixth with 409, and takes one more once one is paid', async () => {
      const { client, id } = await signedIn();
      const made = [];
      for (let i = 0; i < 5; i++) {
        const answer = await client.post('/api/payments/checkout', { amount: 1000 });
        expect(answer.status, answer.text).to.equal(201);
        made.push(answer.body);
      }
      const sessions = stripe.calls('POST', '/v1/checkout/sessions').length;
      const refused = await client.post('/api/payments/checkout', { amount: 1000 });
      expectError(refused, 409, 'conflict');
      expect(refused.body.error.message).to.include('5 checkouts waiting for payment').and.include('payments.stripe.max_pending_checkouts');
      expect(stripe.calls('POST', '/v1/checkout/sessions')).to.have.length(sessions);
      expect(await tg.store.payments.listOrders({ accountId: id, status: 'pending' })).to.have.length(5);

      const session = stripe.complete(new URL(made[0].url).pathname.split('/').pop()!);
      expect((await stripe.deliver(`${tg.url}/api/payments/stripe/webhook`, stripe.event('checkout.session.completed', session))).status).to.equal(200);
      expect((await client.post('/api/payments/checkout', { amount: 1000 })).status).to.equal(201);
    });

    it('of twelve checkouts asked at once, makes five', async () => {
      const { client, id } = await signedIn();
      const answers = await Promise.all(Array.from({ length: 12 }, () => client.post('/api/payments/checkout', { amount: 1000 })));
      expect(answers.filter((answer) => answer.status === 201)).to.have.length(5);
      expect(answers.filter((answer) => answer.status === 409)).to.have.length(7);
      expect(await tg.store.payments.listOrders({ accountId: id, status: 'pending' })).to.have.length(5);
    });
  });
}

describe('card payments: where Stripe sends the browser back', function () {
  this.timeout(30_000);
  let stripe: FakeStripe;
  const started: TestGateway[] = [];

  before(async () => {
    stripe = await FakeStripe.start();
    await passwordHash();
  });

  after(async () => {
    for (const tg of started) await tg.stop();
    await stripe?.close();
  });

  /** A checkout by a new account of a gateway under `server` settings, sent with `headers`; the return address Stripe was given. */
  async function successUrl(server: string, headers: Record<string, string>): Promise<{ url: string; tg: TestGateway }> {
    const tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { server }) + stripeYaml(stripe.url) });
    started.push(tg);
    await addAccount(tg.store, 'dora');
    const client = await ApiClient.login(tg.url, 'dora', PASSWORD);
    const answer = await rawPost(tg.url, '/api/payments/checkout', { ...client.headersFor('POST', {}), ...headers }, { amount: 1000 });
    expect(answer.status, JSON.stringify(answer.body)).to.equal(201);
    return { url: stripe.calls('POST', '/v1/checkout/sessions').at(-1)!.body.success_url as string, tg };
  }

  it('without server.public_url, ignores a forged Host and X-Forwarded-Host: the listen address gateway.yaml names', async () => {
    const { url, tg } = await successUrl('trust_proxy: true', { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
    expect(url.startsWith(`${tg.url}/console/payments?order=pay_`), url).to.equal(true);
    expect(new URL(url).host).to.equal(`127.0.0.1:${tg.gateway.port}`);
  });

  it('without trust_proxy, ignores a forged Host too', async () => {
    const { url, tg } = await successUrl('trust_proxy: false', { host: 'evil.example:8080' });
    expect(new URL(url).origin).to.equal(tg.url);
  });

  it('with server.public_url, returns there whatever the headers say', async () => {
    const { url } = await successUrl('public_url: "https://llm.example.com"', { host: 'evil.example', 'x-forwarded-host': 'evil.example' });
    expect(url.startsWith('https://llm.example.com/console/payments?order=pay_'), url).to.equal(true);
  });
});
