/**
 * The console's log lines: each management request gets one line saying who did what, and nothing
 * secret (password, session cookie, CSRF token, management token, new API key) appears in any line.
 */
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { captureLogger } from '../helpers/capture-logger';
import { ApiClient, send } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';
import { SESSION_COOKIE } from '../../src/admin/secrets';

interface LogLine {
  msg: string;
  level: number;
  [field: string]: unknown;
}

describe('management API: log lines', function () {
  this.timeout(20_000);
  const lines: string[] = [];
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9'), logger: captureLogger('debug', lines) });
  });

  after(async () => tg?.stop());

  const parsed = (): LogLine[] => lines.map((line) => JSON.parse(line) as LogLine);

  it('writes one line per management request with method, path, status and the calling account', async () => {
    const account = await addAccount(tg.store, 'logged-user', 'user');
    const client = await ApiClient.login(tg.url, 'logged-user', PASSWORD);
    const answer = await client.get('/api/account', { headers: { 'x-request-id': 'req-log-check' } });
    expect(answer.status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = parsed().find((entry) => entry.clientRequestId === 'req-log-check');
    expect(line?.requestId, "the gateway's own id, as answered").to.equal(answer.headers.get('x-request-id'));
    expect(line).to.deep.include({ msg: 'management request', method: 'GET', path: '/api/account', status: 200, accountId: account.id, level: 'info' });
    expect(line).not.to.have.property('model');
    expect(parsed().some((entry) => entry.msg === 'console: logged in' && entry.account === 'logged-user')).to.equal(true);
  });

  it('never writes the password, the cookie, the CSRF token, a management token or a new key', async () => {
    await addAccount(tg.store, 'secretive', 'user');
    const wrong = await send(tg.url, 'POST', '/api/session', { body: { login: 'secretive', password: 'WRONG-PASSWORD-SENTINEL' } });
    expect(wrong.status).to.equal(401);
    const client = await ApiClient.login(tg.url, 'secretive', PASSWORD);
    const key = await client.createKey({ name: 'logged-key' });
    const token = await client.post('/api/tokens', { name: 'logged-token', password: PASSWORD });
    expect(token.status).to.equal(201);
    const cookie = client.cookie!;
    await client.delete('/api/session');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = lines.join('\n');
    for (const secret of [PASSWORD, 'WRONG-PASSWORD-SENTINEL', cookie, client.csrfToken!, key.secret, token.body.secret as string]) {
      expect(text.includes(secret), `a log line holds ${secret.slice(0, 6)}…`).to.equal(false);
    }
    expect(text).not.to.include(`${SESSION_COOKIE}=`);
    expect(parsed().some((entry) => entry.msg === 'console: wrong name or password')).to.equal(true);
  });
});
