/**
 * Admin → Accounts at scale: GET /api/admin/accounts searches names and e-mails, sorts by name,
 * balance, last request or creation, pages with limit/offset and counts every match in `total`; each
 * account carries when it last made a request.
 */
import { expect } from 'chai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { ApiClient, expectError } from './api-client';
import { addAccount, chat, consoleYaml, passwordHash, PASSWORD } from './fixtures';

describe('management API: the account list searched, sorted and paged', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let root: ApiClient;
  const names = (answer: { body: { accounts: { name: string }[] } }) => answer.body.accounts.map((account) => account.name);

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    await addAccount(tg.store, 'root', 'admin', 'root@ops.example');
    for (const [index, name] of ['alice', 'bob', 'carol', 'dave', 'erin'].entries()) {
      const account = await addAccount(tg.store, name, 'user', `${name}@${index % 2 === 0 ? 'even' : 'odd'}.example`);
      await tg.store.credit({ accountId: account.id, amount: BigInt(index + 1) * 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    }
    root = await ApiClient.login(tg.url, 'root', PASSWORD);
    // carol makes a request: the only account (besides none) with a last request.
    const carol = (await tg.store.findAccountByName('carol'))!;
    const { key } = await tg.createKey({ accountId: carol.id });
    fake.enqueue(chatCompletion({ text: 'hi', inputTokens: 5, outputTokens: 1 }));
    expect((await chat(tg.url, key, 'gpt-priced')).status).to.equal(200);
    for (let tries = 0; tries < 200 && (await tg.store.listCharges({ accountId: carol.id })).length === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it('without limit lists every account, by name, with the total', async () => {
    const answer = await root.get('/api/admin/accounts');
    expect(names(answer)).to.include.members(['alice', 'bob', 'carol', 'dave', 'erin', 'root']);
    expect(answer.body.total).to.equal(answer.body.accounts.length);
    const listed = names(answer);
    expect(listed).to.deep.equal([...listed].sort((a, b) => a.localeCompare(b)));
  });

  it('searches names and e-mails, any case', async () => {
    expect(names(await root.get('/api/admin/accounts?q=CAR'))).to.deep.equal(['carol']);
    expect(names(await root.get('/api/admin/accounts?q=odd.example'))).to.deep.equal(['bob', 'dave']);
    const none = await root.get('/api/admin/accounts?q=nobody-has-this');
    expect(none.body).to.deep.equal({ accounts: [], total: 0 });
  });

  it('sorts by balance and by last request, largest and newest first', async () => {
    expect(names(await root.get('/api/admin/accounts?q=.example&sort=balance')).slice(0, 5)).to.deep.equal(['erin', 'dave', 'carol', 'bob', 'alice']);
    expect(names(await root.get('/api/admin/accounts?q=.example&sort=balance&order=asc')).slice(-5)).to.deep.equal(['alice', 'bob', 'carol', 'dave', 'erin']);
    const byLast = await root.get('/api/admin/accounts?sort=last_request');
    expect(byLast.body.accounts[0]).to.include({ name: 'carol' });
    expect(Date.parse(byLast.body.accounts[0].last_request_at)).to.be.closeTo(Date.now(), 60_000);
    expect(byLast.body.accounts.slice(1).every((account: { last_request_at: string | null }) => account.last_request_at === null)).to.equal(true);
  });

  it('pages with limit and offset, the total counting every match', async () => {
    const first = await root.get('/api/admin/accounts?q=.example&limit=2');
    const second = await root.get('/api/admin/accounts?q=.example&limit=2&offset=2');
    const third = await root.get('/api/admin/accounts?q=.example&limit=2&offset=4');
    expect(first.body.total).to.equal(6);
    expect([...names(first), ...names(second), ...names(third)]).to.deep.equal(['alice', 'bob', 'carol', 'dave', 'erin', 'root']);
    expectError(await root.get('/api/admin/accounts?sort=color'), 400, 'invalid_request', 'sort');
    expectError(await root.get('/api/admin/accounts?limit=0'), 400, 'invalid_request', 'limit');
    expectError(await root.get('/api/admin/accounts?offset=-1'), 400, 'invalid_request', 'offset');
  });
});
