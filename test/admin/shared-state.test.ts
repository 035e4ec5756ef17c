/**
 * The management API with two gateway instances over one PostgreSQL database and one Redis prefix,
 * as behind a load balancer: a console login made on one instance is valid (and ended) on the other;
 * a redemption or an admin credit made through one reaches the Redis balance the other admits
 * requests against; disabling an account on one locks its key out of the other's /v1 within moments
 * (LISTEN/NOTIFY empties the key cache); and one code raced through both credits once. Skipped,
 * saying so, without the services.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { formatUnits, unitsToNano } from '../../src/billing/money';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { chatCompletion } from '../helpers/upstream-replies';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, chat, consoleYaml, PASSWORD, passwordHash, waitFor } from './fixtures';

/** The fake upstream's usage for every priced request here: 20 input and 10 output tokens of gpt-priced. */
const REPLY_TOKENS = { inputTokens: 20, outputTokens: 10 } as const;
/** What that usage costs at gpt-priced's prices (1,000 nano per input token, 5,000 per output token). */
const REPLY_COST = 20n * 1_000n + 10n * 5_000n;

/** The suites' gateway.yaml, with the in-memory SQLite store swapped for the shared database and Redis. */
function sharedConsoleYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string): string {
  const local = 'store: { url: "sqlite::memory:" }';
  const yaml = consoleYaml(upstreamUrl);
  if (!yaml.includes(local)) throw new Error('consoleYaml no longer names its store as expected; update sharedConsoleYaml');
  return yaml.replace(local, `store: { url: "${storeUrl}" }\nredis: { url: "${REDIS_URL}", key_prefix: "${redisPrefix}" }`);
}

describe('management API: two instances sharing PostgreSQL and Redis', function () {
  this.timeout(30_000);
  let shared: SharedInstances | null = null;
  let fake: FakeUpstream;
  let store: Store;
  let a: Gateway;
  let b: Gateway;
  let redisPrefix: string;
  /** The administrator "root", logged in on A. */
  let rootOnA: ApiClient;

  before(async function () {
    const started = await startSharedInstances('admin-shared', sharedConsoleYaml);
    if ('problem' in started) {
      console.log(`      ${started.problem}: shared-state management API suite skipped`);
      this.skip();
    }
    shared = started;
    ({ fake, store } = shared);
    [a, b] = shared.gateways;
    redisPrefix = shared.redisPrefix;
    await passwordHash();
    await addAccount(store, 'root', 'admin');
    rootOnA = await ApiClient.login(a.url, 'root', PASSWORD);
  });

  after(async () => shared?.close());

  /** The same login (cookie and CSRF token) used against another instance. */
  function sameLoginOn(client: ApiClient, gateway: Gateway): ApiClient {
    return new ApiClient(gateway.url, client.cookie, client.csrfToken);
  }

  /** A priced request that reaches the upstream, which answers with REPLY_TOKENS of usage. */
  function pricedChat(gateway: Gateway, key: string) {
    fake.enqueue(chatCompletion({ text: 'hello', ...REPLY_TOKENS }));
    return chat(gateway.url, key, 'gpt-priced');
  }

  /** A priced request expected to be refused before the upstream (nothing is queued for it). */
  async function refusedChat(gateway: Gateway, key: string, status: number, code: string): Promise<void> {
    const upstreamBefore = fake.requests.length;
    const answer = await chat(gateway.url, key, 'gpt-priced');
    expect(answer.status, JSON.stringify(answer.json)).to.equal(status);
    expect(answer.json.error.code).to.equal(code);
    expect(fake.requests.length, 'the refused request reached the upstream').to.equal(upstreamBefore);
  }

  async function accountBalance(client: ApiClient): Promise<{ balance: string; held: string }> {
    const answer = await client.get('/api/account');
    expect(answer.status, answer.text).to.equal(200);
    return { balance: answer.body.balance, held: answer.body.held };
  }

  async function newCode(amount: string): Promise<string> {
    const answer = await rootOnA.post('/api/admin/redemption-codes', { count: 1, amount });
    expect(answer.status, answer.text).to.equal(201);
    return answer.body.codes[0].code;
  }

  it('a login made on A works on B, and logging out on B ends it on A too', async () => {
    // The account itself is made by the administrator through B.
    const created = await sameLoginOn(rootOnA, b).post('/api/admin/accounts', { name: 'lou', password: PASSWORD });
    expect(created.status, created.text).to.equal(201);
    const louId = created.body.account.id;

    const onA = await ApiClient.login(a.url, 'lou', PASSWORD);
    const onB = sameLoginOn(onA, b);
    const session = await onB.get('/api/session');
    expect(session.status, session.text).to.equal(200);
    expect(session.body.account).to.deep.include({ id: louId, name: 'lou', role: 'user' });
    expect(session.body.csrf_token).to.equal(onA.csrfToken);
    const account = await onB.get('/api/account');
    expect(account.status, account.text).to.equal(200);
    expect(account.body.account.id).to.equal(louId);
    expect(account.body.balance).to.equal('0');

    const logout = await onB.delete('/api/session');
    expect(logout.status, logout.text).to.equal(204);
    expect(onB.cookie, 'B clears the cookie').to.equal(null);
    // The old cookie, as a stale browser tab on A would still send it.
    expectError(await onA.get('/api/session'), 401, 'unauthenticated');
    expectError(await onA.get('/api/account'), 401, 'unauthenticated');
    expectError(await sameLoginOn(onA, b).get('/api/session'), 401, 'unauthenticated');
    expect(await store.listSessions(louId, 'session')).to.deep.equal([]);
  });

  it('a code generated on A and redeemed on B pays for requests on both, and both show the same balance', async () => {
    const user = await addAccount(store, 'rey');
    const onB = await ApiClient.login(b.url, 'rey', PASSWORD);
    const onA = sameLoginOn(onB, a);
    const { secret: key } = await onA.createKey({ name: 'shared' });
    const code = await newCode('0.01');

    // Unfunded: refused on both instances (this also seeds the account's Redis balance at 0).
    await refusedChat(a, key, 402, 'insufficient_balance');
    await refusedChat(b, key, 402, 'insufficient_balance');
    expect(await accountBalance(onA)).to.deep.equal({ balance: '0', held: '0' });

    const redeemed = await onB.post('/api/topup/redeem', { code });
    expect(redeemed.status, redeemed.text).to.equal(200);
    expect(redeemed.body.credit).to.deep.include({ amount: '0.01', kind: 'redemption', actor: 'rey' });
    expect(redeemed.body.balance).to.equal('0.01');

    const onA200 = await pricedChat(a, key);
    expect(onA200.status, JSON.stringify(onA200.json)).to.equal(200);
    expect(onA200.headers.get('x-tollgate-cost')).to.equal(formatUnits(REPLY_COST));
    const onB200 = await pricedChat(b, key);
    expect(onB200.status, JSON.stringify(onB200.json)).to.equal(200);
    expect(onB200.headers.get('x-tollgate-cost')).to.equal(formatUnits(REPLY_COST));

    const charges = await chargesOf(store, user.id, 2);
    expect(charges).to.have.length(2);
    expect(charges.map((charge) => charge.cost)).to.deep.equal([REPLY_COST, REPLY_COST]);
    const expected = unitsToNano('0.01') - 2n * REPLY_COST;
    expect(await store.balance(user.id)).to.deep.equal({ balance: expected, held: 0n });
    const shown = { balance: formatUnits(expected), held: '0' };
    expect(await accountBalance(onA), 'balance shown on A').to.deep.equal(shown);
    expect(await accountBalance(onB), 'balance shown on B').to.deep.equal(shown);
  });

  it('an admin credit made on A reaches the Redis balance B admits against, recorded once with the admin as actor', async () => {
    const user = await addAccount(store, 'cid');
    const onB = await ApiClient.login(b.url, 'cid', PASSWORD);
    const { secret: key } = await onB.createKey({ name: 'b-only' });
    // Refused on B first, which seeds the account's Redis balance (0) before the credit.
    await refusedChat(b, key, 402, 'insufficient_balance');

    const note = 'goodwill for ticket #42';
    const credited = await rootOnA.post(`/api/admin/accounts/${user.id}/credits`, { amount: '0.001', note });
    expect(credited.status, credited.text).to.equal(201);
    expect(credited.body.credit).to.deep.include({ amount: '0.001', kind: 'admin', actor: 'root', note });
    expect(credited.body.balance).to.equal('0.001');

    const reader = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      expect(await reader.hget(`${redisPrefix}account:${user.id}`, 'balance'), 'the Redis balance').to.equal(String(unitsToNano('0.001')));
    } finally {
      reader.disconnect();
    }
    const answer = await pricedChat(b, key);
    expect(answer.status, JSON.stringify(answer.json)).to.equal(200);

    const credits = await store.listCredits(user.id);
    expect(credits).to.have.length(1);
    expect(credits[0]).to.deep.include({ accountId: user.id, amount: unitsToNano('0.001'), kind: 'admin', actor: 'root', note });
    const listed = await onB.get('/api/credits');
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.credits).to.deep.equal([credited.body.credit]);

    await chargesOf(store, user.id, 1);
    const expected = { balance: formatUnits(unitsToNano('0.001') - REPLY_COST), held: '0' };
    expect(await accountBalance(onB)).to.deep.equal(expected);
    expect(await accountBalance(sameLoginOn(onB, a))).to.deep.equal(expected);
  });

  it('disabling an account on A refuses its key on B within moments, and ends its console session and token on B', async () => {
    const user = await addAccount(store, 'dex');
    const onB = await ApiClient.login(b.url, 'dex', PASSWORD);
    const minted = await onB.post('/api/tokens', { name: 'script', password: PASSWORD });
    expect(minted.status, minted.text).to.equal(201);
    const tokenOnB = new ApiClient(b.url, null, null, minted.body.secret);
    expect((await tokenOnB.get('/api/account')).status).to.equal(200);
    const { secret: key } = await onB.createKey({ name: 'cached' });
    // A free model: only authentication stands between the key and the upstream. This request puts
    // the key in B's cache, whose entries live 60 s unless the store's key revision moves.
    expect((await chat(b.url, key, 'gpt-free')).status).to.equal(200);
    expect((await chat(b.url, key, 'gpt-free')).status).to.equal(200);
    // B listens for key changes (while it does not, its revision moves on every read and nothing is cached).
    expect(b.store.keysRevision(), 'B is listening for key changes').to.equal(b.store.keysRevision());
    expect((await onB.get('/api/account')).status).to.equal(200);

    const disabled = await rootOnA.patch(`/api/admin/accounts/${user.id}`, { disabled: true });
    expect(disabled.status, disabled.text).to.equal(200);
    expect(disabled.body.account).to.deep.include({ id: user.id, disabled: true });

    const started = Date.now();
    const refused = await waitFor(() => chat(b.url, key, 'gpt-free'), (answer) => answer.status !== 200, 'B to refuse the disabled account\'s key', 2000);
    const elapsed = Date.now() - started;
    expect(refused.status, JSON.stringify(refused.json)).to.equal(401);
    expect(refused.json.error.code).to.equal('invalid_api_key');
    expect(elapsed, 'ms until B refused the key').to.be.below(2000);
    expect((await chat(a.url, key, 'gpt-free')).status, 'A refuses it too').to.equal(401);

    // Disabling ends the account's sessions in the shared store: B no longer knows the cookie.
    expectError(await onB.get('/api/account'), 401, 'unauthenticated');
    expectError(await onB.get('/api/session'), 401, 'unauthenticated');
    expectError(await tokenOnB.get('/api/account'), 401, 'unauthenticated');
  });

  it("an admin ending an account's sessions on A ends its cookie and token on B; limits set on A hold on B", async () => {
    const user = await addAccount(store, 'eve-shared');
    const onB = await ApiClient.login(b.url, 'eve-shared', PASSWORD);
    const minted = await onB.post('/api/tokens', { name: 'script', password: PASSWORD });
    expect(minted.status, minted.text).to.equal(201);
    const tokenOnB = new ApiClient(b.url, null, null, minted.body.secret);
    expect((await tokenOnB.get('/api/account')).status).to.equal(200);
    const { id: keyId, secret: key } = await onB.createKey({ name: 'cached' });
    expect((await chat(b.url, key, 'gpt-free')).status).to.equal(200);

    const ended = await rootOnA.delete(`/api/admin/accounts/${user.id}/sessions`);
    expect(ended.status, ended.text).to.equal(200);
    expect(ended.body.ended).to.equal(2);
    expectError(await onB.get('/api/account'), 401, 'unauthenticated');
    expectError(await tokenOnB.get('/api/account'), 401, 'unauthenticated');

    // The operator's model list set through A reaches B's key cache (its entries follow the key revision).
    const limited = await rootOnA.patch(`/api/admin/keys/${keyId}`, { models: ['gpt-priced'] });
    expect(limited.status, limited.text).to.equal(200);
    const refused = await waitFor(() => chat(b.url, key, 'gpt-free'), (answer) => answer.status !== 200, 'B to apply the operator\'s model list', 2000);
    expect(refused.status, JSON.stringify(refused.json)).to.equal(403);
    expect(refused.json.error.code).to.equal('model_not_allowed');
  });

  it('one code redeemed concurrently through A and B credits once: one 200, the rest 409', async () => {
    const user = await addAccount(store, 'raz');
    const onA = await ApiClient.login(a.url, 'raz', PASSWORD);
    const onB = await ApiClient.login(b.url, 'raz', PASSWORD);
    // Seed the Redis balance first, so a credit applied twice there would show.
    expect(await accountBalance(onA)).to.deep.equal({ balance: '0', held: '0' });
    const code = await newCode('0.5');

    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? onA : onB).post('/api/topup/redeem', { code })));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200), `statuses ${statuses.join(' ')}`).to.have.length(1);
    for (const lost of answers.filter((answer) => answer.status !== 200)) expectError(lost, 409, 'conflict', 'code');
    const won = answers.find((answer) => answer.status === 200)!;
    expect(won.body.credit).to.deep.include({ amount: '0.5', kind: 'redemption' });
    expect(won.body.balance).to.equal('0.5');

    const credits = await store.listCredits(user.id);
    expect(credits).to.have.length(1);
    expect(credits[0]).to.deep.include({ id: won.body.credit.id, amount: unitsToNano('0.5'), kind: 'redemption' });
    expect(await store.balance(user.id)).to.deep.equal({ balance: unitsToNano('0.5'), held: 0n });
    expect(await accountBalance(onA), 'balance shown on A').to.deep.equal({ balance: '0.5', held: '0' });
    expect(await accountBalance(onB), 'balance shown on B').to.deep.equal({ balance: '0.5', held: '0' });
    const codes = await rootOnA.get('/api/admin/redemption-codes');
    const mine = codes.body.codes.filter((listed: { redeemed_by: string | null }) => listed.redeemed_by === user.id);
    expect(mine).to.have.length(1);
    expect(mine[0]).to.deep.include({ amount: '0.5', status: 'redeemed' });
  });
});
