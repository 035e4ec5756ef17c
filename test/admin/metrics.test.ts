/** What the console adds to /metrics: log-in outcomes (to alert on guessing) and funds credited. */
import { expect } from 'chai';
import { generateRedemptionCode, hashRedemptionCode } from '../../src/billing/redemption';
import { parseSamples, sampleValue } from '../helpers/prometheus';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, send } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('management API: metrics', function () {
  this.timeout(20_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'login_failures_per_window: 1' }) });
  });

  after(async () => tg?.stop());

  async function scrape() {
    const answer = await fetch(`${tg.url}/metrics`);
    expect(answer.status).to.equal(200);
    return parseSamples(await answer.text());
  }

  it('counts funds credited by an administrator and by redemption, in units', async () => {
    await addAccount(tg.store, 'metric-admin', 'admin');
    const admin = await ApiClient.login(tg.url, 'metric-admin', PASSWORD);
    const user = await addAccount(tg.store, 'metric-user', 'user');
    expect((await admin.post(`/api/admin/accounts/${user.id}/credits`, { amount: '2.5', note: 'metrics test' })).status).to.equal(201);
    const code = generateRedemptionCode();
    await tg.store.createRedemptionCodes({ hashes: [hashRedemptionCode(code)], amount: 5_000_000_000n, createdBy: 'test', expiresAt: null });
    expect((await admin.post('/api/topup/redeem', { code })).status).to.equal(200);
    expect((await admin.post('/api/topup/redeem', { code })).status, 'a second redemption credits nothing').to.equal(409);

    const samples = await scrape();
    expect(sampleValue(samples, 'tollgate_credited_units_total', { kind: 'admin' })).to.equal(2.5);
    expect(sampleValue(samples, 'tollgate_credited_units_total', { kind: 'redemption' })).to.equal(5);
  });

  it('counts log-ins by outcome: success, wrong_password, limited', async () => {
    // One success came in the test above; now one wrong password, then the limit (1 per address) refuses.
    expect((await send(tg.url, 'POST', '/api/session', { body: { login: 'nobody-here', password: 'not the password' } })).status).to.equal(401);
    expect((await send(tg.url, 'POST', '/api/session', { body: { login: 'nobody-here', password: 'still not it' } })).status).to.equal(429);
    expect((await send(tg.url, 'POST', '/api/session', { body: { login: 'metric-admin', password: PASSWORD } })).status).to.equal(429);

    const samples = await scrape();
    expect(sampleValue(samples, 'tollgate_console_logins_total', { outcome: 'success' })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_console_logins_total', { outcome: 'wrong_password' })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_console_logins_total', { outcome: 'limited' })).to.equal(2);
  });

  it('counts a disabled account that gave the right password', async () => {
    const fresh = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') });
    try {
      const account = await addAccount(fresh.store, 'metric-off', 'user');
      await fresh.store.setAccountDisabled(account.id, true);
      expect((await send(fresh.url, 'POST', '/api/session', { body: { login: 'metric-off', password: PASSWORD } })).status).to.equal(403);
      const samples = parseSamples(await (await fetch(`${fresh.url}/metrics`)).text());
      expect(sampleValue(samples, 'tollgate_console_logins_total', { outcome: 'disabled' })).to.equal(1);
      expect(sampleValue(samples, 'tollgate_console_logins_total', { outcome: 'success' })).to.equal(undefined);
    } finally {
      await fresh.stop();
    }
  });

});
