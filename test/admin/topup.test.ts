/**
 * Top Up (docs/faults.md#f8, docs/faults.md#i6): a redemption code credits its own amount exactly once, whoever
 * races for it and whatever the client claims; malformed, unknown, used and expired codes each get
 * their own answer naming the field, and none of them touches the ledger.
 */
import { expect } from 'chai';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { unitsToNano } from '../../src/billing/money';
import { generateRedemptionCode, hashRedemptionCode } from '../../src/billing/redemption';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('management API: top-up with redemption codes', function () {
  this.timeout(20_000);
  let tg: TestGateway;
  let admin: ApiClient;
  let ann: ApiClient;
  let ben: ApiClient;
  let annId: string;
  let benId: string;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') });
    const boss = await addAccount(tg.store, 'boss', 'admin');
    annId = (await addAccount(tg.store, 'ann')).id;
    benId = (await addAccount(tg.store, 'ben')).id;
    [ann, ben] = await Promise.all([ApiClient.login(tg.url, 'ann', PASSWORD), ApiClient.login(tg.url, 'ben', PASSWORD)]);
    // The admin only generates codes here; a management token spares a login.
    const token = newManagementToken();
    await tg.store.createSession({ accountId: boss.id, hash: hashSecret(token), kind: 'token', name: 'codes', expiresAt: null });
    admin = ApiClient.bearer(tg.url, token);
  });

  after(async () => tg?.stop());

  async function newCode(amount: string): Promise<string> {
    const answer = await admin.post('/api/admin/redemption-codes', { count: 1, amount });
    expect(answer.status, answer.text).to.equal(201);
    return answer.body.codes[0].code;
  }

  it('credits the code\'s amount once when redeemed three times, two of them concurrently; later tries are 409', async () => {
    const code = await newCode('7.5');
    const before = await tg.store.listCredits(annId);

    // A client-sent amount is ignored: the code's amount is credited.
    const [first, second] = await Promise.all([
      ann.post('/api/topup/redeem', { code, amount: '1000' }),
      ann.post('/api/topup/redeem', { code, amount: '1000' }),
    ]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).to.deep.equal([200, 409]);
    const won = first.status === 200 ? first : second;
    const lost = first.status === 200 ? second : first;
    expectError(lost, 409, 'conflict', 'code');
    expect(won.body.credit).to.deep.include({ amount: '7.5', kind: 'redemption' });
    expect(won.body.credit.id).to.be.a('string');
    expect(won.body.balance).to.equal('7.5');

    const third = await ann.post('/api/topup/redeem', { code });
    expectError(third, 409, 'conflict', 'code');

    const after = await tg.store.listCredits(annId);
    expect(after).to.have.length(before.length + 1);
    expect(after[0]).to.deep.include({ id: won.body.credit.id, amount: unitsToNano('7.5'), kind: 'redemption' });
    expect((await tg.store.balance(annId)).balance).to.equal(unitsToNano('7.5'));

    const credits = await ann.get('/api/credits');
    expect(credits.status).to.equal(200);
    expect(credits.body.credits).to.have.length(1);
    expect(credits.body.credits[0]).to.deep.equal(won.body.credit);
  });

  it('refuses a code another account redeemed (409), crediting nothing', async () => {
    const code = await newCode('3');
    expect((await ann.post('/api/topup/redeem', { code })).status).to.equal(200);
    const balanceBefore = await tg.store.balance(benId);
    expectError(await ben.post('/api/topup/redeem', { code }), 409, 'conflict', 'code');
    expect(await tg.store.listCredits(benId)).to.have.length(0);
    expect(await tg.store.balance(benId)).to.deep.equal(balanceBefore);
  });

  it('answers 400 naming "code" for malformed codes', async () => {
    const valid = generateRedemptionCode();
    const malformed: unknown[] = ['', 'hello', 'tg-', 'tg-SHORT', valid.toLowerCase(), `${valid}A`, valid.replace('tg-', 'TG-'), `${valid.slice(0, -1)}1`, 42, null, ['tg-x']];
    for (const code of malformed) {
      expectError(await ben.post('/api/topup/redeem', { code }), 400, 'invalid_request', 'code');
    }
    expectError(await ben.post('/api/topup/redeem', {}), 400, 'invalid_request', 'code');
    expect(await tg.store.listCredits(benId)).to.have.length(0);
  });

  it('answers 404 for a well-formed code that was never issued', async () => {
    expectError(await ben.post('/api/topup/redeem', { code: generateRedemptionCode() }), 404, 'not_found', 'code');
    expect(await tg.store.listCredits(benId)).to.have.length(0);
  });

  it('answers 410 for an expired code, and it stays unredeemed', async () => {
    const code = generateRedemptionCode();
    const [record] = await tg.store.createRedemptionCodes({
      hashes: [hashRedemptionCode(code)],
      amount: unitsToNano('50'),
      createdBy: 'test',
      expiresAt: new Date(Date.now() - 1000),
    });
    expectError(await ben.post('/api/topup/redeem', { code }), 410, 'gone', 'code');
    expect(await tg.store.listCredits(benId)).to.have.length(0);
    const listed = (await tg.store.listRedemptionCodes(1000)).find((candidate) => candidate.id === record.id)!;
    expect(listed.redeemedAt).to.equal(null);
  });

  it('accepts a pasted code with whitespace around it, and credits the right account', async () => {
    const code = await newCode('0.000000001');
    const answer = await ben.post('/api/topup/redeem', { code: `  ${code}\n` });
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.body.balance).to.equal('0.000000001');
    expect((await tg.store.listCredits(benId)).map((credit) => credit.amount)).to.deep.equal([1n]);
  });

  it('needs the CSRF token with a cookie', async () => {
    const code = await newCode('1');
    expectError(await ben.post('/api/topup/redeem', { code }, { csrf: false }), 403, 'csrf_failed');
    expectError(await ben.post('/api/topup/redeem', { code }, { headers: { 'x-csrf-token': 'A'.repeat(43) } }), 403, 'csrf_failed');
    expectError(await ben.post('/api/topup/redeem', { code }, { headers: { 'x-csrf-token': ann.csrfToken! } }), 403, 'csrf_failed');
    const credits = await tg.store.listCredits(benId);
    expect(credits.some((credit) => credit.amount === unitsToNano('1'))).to.equal(false);
  });

  it('GET /api/credits lists newest first and honours limit', async () => {
    const all = await ann.get('/api/credits');
    expect(all.body.credits.length).to.be.at.least(2);
    const times = all.body.credits.map((credit: { created_at: string }) => Date.parse(credit.created_at));
    expect([...times].sort((a, b) => b - a)).to.deep.equal(times);
    const one = await ann.get('/api/credits?limit=1');
    expect(one.body.credits).to.deep.equal(all.body.credits.slice(0, 1));
    expectError(await ann.get('/api/credits?limit=0'), 400, 'invalid_request', 'limit');
    expectError(await ann.get('/api/credits?limit=abc'), 400, 'invalid_request', 'limit');
  });
});
