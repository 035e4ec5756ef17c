/**
 * An administrator's adjustment down: POST /api/admin/accounts/{id}/debits takes funds back with a
 * required note, as a ledger entry of its own (a debit of kind `adjustment`), audited, seen at once by
 * the book requests are admitted against, and never below what the account has available. Runs on
 * the embedded store and on PostgreSQL + Redis.
 */
import { expect } from 'chai';
import { formatUnits } from '../../src/billing/money';
import { onEachBackend, type Backend } from '../helpers/backends';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, chat, consoleYaml, passwordHash, PASSWORD } from './fixtures';

onEachBackend((backend) => `management API: adjustments on ${backend}`, 'adjustments', adjustments);

function adjustments(backendOf: () => Backend): void {
  let fake: FakeUpstream;
  let tg: TestGateway;
  let root: ApiClient;
  let uma: ApiClient;
  let umaId: string;

  const debit = (amount: unknown, note?: unknown) => root.post(`/api/admin/accounts/${umaId}/debits`, { amount, ...(note !== undefined && { note }) });
  const liveBalance = async () => (await uma.get('/api/account')).body.balance as string;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    const yaml = consoleYaml(fake.url).replace('store: { url: "sqlite::memory:" }', backendOf().sections);
    tg = await startTestGateway({ yaml, storeFromConfig: true });
    await addAccount(tg.store, 'root', 'admin');
    umaId = (await addAccount(tg.store, 'uma')).id;
    [root, uma] = await Promise.all([ApiClient.login(tg.url, 'root', PASSWORD), ApiClient.login(tg.url, 'uma', PASSWORD)]);
    const credited = await root.post(`/api/admin/accounts/${umaId}/credits`, { amount: '10', note: 'opening credit' });
    expect(credited.status, credited.text).to.equal(201);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it('takes exactly the amount, as an adjustment with the administrator and the note', async () => {
    const answer = await debit('3.250000001', 'credited twice by mistake');
    expect(answer.status, answer.text).to.equal(201);
    expect(answer.body.debit).to.deep.include({ kind: 'adjustment', amount: '3.250000001', actor: 'root', note: 'credited twice by mistake', order_id: null });
    expect(answer.body.balance).to.equal('6.749999999');
    expect(await liveBalance()).to.equal('6.749999999');

    // The account sees it among its debits, and the ledger adds up: credits − charges − debits = balance.
    const payments = await uma.get('/api/payments');
    expect(payments.body.debits.map((d: { id: string }) => d.id)).to.include(answer.body.debit.id);
    const totals = (await tg.store.ledgerTotals()).find((row) => row.accountId === umaId)!;
    expect(totals.debits).to.equal(3_250_000_001n);
    expect(totals.credits - totals.charges - totals.debits).to.equal(totals.balance);
  });

  it('is audited with the balance before and after', async () => {
    const entries = (await root.get(`/api/admin/audit?action=account.debit&target=${umaId}`)).body.entries as { action: string; before: unknown; after: Record<string, unknown> }[];
    expect(entries).to.have.length(1);
    expect(entries[0].before).to.deep.equal({ balance: '10' });
    expect(entries[0].after).to.deep.include({ balance: '6.749999999', amount: '3.250000001', note: 'credited twice by mistake' });
  });

  it('refuses a missing note, a bad amount, or more than is available, and takes nothing', async () => {
    const before = await tg.store.payments.listDebits(umaId);
    expectError(await debit('1'), 400, 'invalid_request', 'note');
    expectError(await debit('1', '  '), 400, 'invalid_request', 'note');
    for (const amount of ['-1', '0', 'abc', '']) expectError(await debit(amount, 'bad'), 400, 'invalid_request', 'amount');
    const over = await debit('6.75', 'more than there is');
    expectError(over, 400, 'invalid_request', 'amount');
    expect(over.body.error.message).to.contain('6.749999999 available');
    expectError(await root.post('/api/admin/accounts/acc_0000000000000000/debits', { amount: '1', note: 'x' }), 404, 'not_found');
    expect(await tg.store.payments.listDebits(umaId)).to.deep.equal(before);
    expect(await liveBalance()).to.equal('6.749999999');
  });

  it('the book admits requests against the adjusted balance at once', async () => {
    const { key } = await tg.createKey({ accountId: umaId });
    fake.enqueue(chatCompletion({ text: 'ok', inputTokens: 10, outputTokens: 2 }));
    expect((await chat(tg.url, key, 'gpt-priced')).status).to.equal(200);
    // The charge reaches the ledger a batch later; the money test below reads the ledger's sums.
    await chargesOf(tg.store, umaId, 1);
    // Take everything that is left: the next paid request is refused for want of funds.
    const left = await liveBalance();
    expect((await debit(left, 'account closed')).status).to.equal(201);
    expect(await liveBalance()).to.equal('0');
    const refused = await chat(tg.url, key, 'gpt-priced');
    expect(refused.status).to.equal(402);
  });

  it('GET /api/admin/money puts money received, taken back and outstanding beside usage charged', async () => {
    // A card payment of 20.00 (credits 20) with 5.00 of it refunded, as Stripe's events would leave it.
    const order = await tg.store.payments.createOrder({ accountId: umaId, kind: 'checkout', currency: 'usd', amountMinor: 2000, creditAmount: 20_000_000_000n });
    // Straight to the store: this test reads the ledger's sums, not the live book.
    await tg.store.payments.creditOrder(order.id, { paymentIntentId: 'pi_money' });
    await tg.store.payments.refundOrder(order.id, 500, 'ch_money:refunded:500');

    const answer = await root.get('/api/admin/money');
    expect(answer.status, answer.text).to.equal(200);
    const charged = await tg.store.chargeTotals({ since: new Date(answer.body.since), until: new Date(answer.body.until) });
    const balances = (await tg.store.ledgerTotals()).reduce((sum, row) => sum + (row.balance > 0n ? row.balance : 0n), 0n);
    expect(answer.body).to.deep.include({
      card_payments: '20',
      refunds: '5',
      disputes: '0',
      received: '15',
      admin_credits: '10',
      usage_charged: formatUnits(charged.cost),
      outstanding: formatUnits(balances),
    });
    // Every adjustment of this suite: the mistaken credit and the closing one, to the nano-unit.
    const taken = (await tg.store.payments.listDebits(umaId)).filter((d) => d.kind === 'adjustment').reduce((sum, d) => sum + d.amount, 0n);
    expect(answer.body.adjustments).to.equal(formatUnits(taken));
    expect(charged.cost > 0n, 'the paid request was charged').to.equal(true);
    expectError(await uma.get('/api/admin/money'), 403, 'forbidden');
  });
}
