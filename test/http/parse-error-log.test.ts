/**
 * Requests Node's HTTP parser cannot read, on both listeners (the console's API on Koa, the model
 * endpoints on their own context): whatever gets logged about them names the error's code and message,
 * never the raw bytes it failed on, which hold the whole request (token, cookie, password). A DELETE
 * with a JSON body and no Content-Length is enough: its body is read as the next request.
 */
import net from 'node:net';
import { expect } from 'chai';
import { ApiClient } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';
import { captureLogger } from '../helpers/capture-logger';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { SESSION_COOKIE } from '../../src/admin/secrets';
import { issueApiKey } from '../../src/auth/issue-key';

/** Writes `text` on a fresh connection and reads until the gateway closes it (or 3 s pass). */
function sendRaw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

/** The forms a secret could take in a JSON log line: itself, and its bytes as a Buffer is written. */
function renderings(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [secret, JSON.stringify(bytes.toJSON().data).slice(1, -1), bytes.toString('hex'), bytes.toString('base64')];
}

describe('malformed requests: the log keeps no credential', function () {
  this.timeout(30_000);
  const lines: string[] = [];
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9'), logger: captureLogger('debug', lines) });
  });

  after(async () => tg?.stop());

  it('logs the parse errors of both listeners as code and message, without the raw request', async () => {
    const account = await addAccount(tg.store, 'parse-error-admin', 'admin');
    const client = await ApiClient.login(tg.url, 'parse-error-admin', PASSWORD);
    const minted = await client.post('/api/tokens', { name: 'parse-errors', password: PASSWORD });
    expect(minted.status).to.equal(201);
    const token = minted.body.secret as string;
    const cookie = client.cookie!;
    const csrf = client.csrfToken!;
    const apiKey = (await issueApiKey(tg.store, { accountId: account.id, name: 'parse-errors' })).key;
    const typedPassword = 'PLAINTEXT-PASSWORD-SENTINEL-41';
    const body = JSON.stringify({ password: typedPassword });
    const port = new URL(tg.url).port;

    // The management listener: the finding's request, by token and by cookie.
    await sendRaw(Number(port), `DELETE /api/account/2fa HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\ncontent-type: application/json\r\n\r\n${body}`);
    await sendRaw(
      Number(port),
      `DELETE /api/account/2fa HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${SESSION_COOKIE}=${cookie}\r\nx-csrf-token: ${csrf}\r\ncontent-type: application/json\r\n\r\n${body}`,
    );
    // The model endpoints: the same trick, a body followed by bytes that are no request, a broken chunk.
    const chat = JSON.stringify({ model: 'gpt-free', messages: [{ role: 'user', content: 'hi' }] });
    const v1 = `Host: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\ncontent-type: application/json\r\n`;
    await sendRaw(Number(port), `DELETE /v1/chat/completions HTTP/1.1\r\n${v1}\r\n${body}`);
    await sendRaw(Number(port), `POST /v1/chat/completions HTTP/1.1\r\n${v1}content-length: ${chat.length}\r\n\r\n${chat}${body}`);
    await sendRaw(Number(port), `POST /v1/chat/completions HTTP/1.1\r\n${v1}transfer-encoding: chunked\r\n\r\n5\r\n{"mod\r\nzz${body}`);

    // Every answer is over; the lines of the last ones are written off the request's path.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const text = lines.join('\n');
    expect(text).to.include('HPE_', 'the parse error is logged at all (by its code)');
    expect(text).not.to.include('rawPacket');
    for (const secret of [token, cookie, csrf, apiKey, PASSWORD, typedPassword]) {
      for (const form of renderings(secret)) expect(text.includes(form), `a log line holds ${secret.slice(0, 6)}… (as ${form.slice(0, 12)}…)`).to.equal(false);
    }
    const parseLines = lines.filter((line) => line.includes('HPE_'));
    for (const line of parseLines) expect(JSON.parse(line)).to.include({ msg: 'malformed request from the client' });
  });
});
