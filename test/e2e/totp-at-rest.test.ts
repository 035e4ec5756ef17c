/**
 * TOTP secrets at rest through the real `tollgate serve`, on an SQLite store without
 * TOLLGATE_SECRET_KEY: the first start makes the key file and says so, an admin enrols, the file
 * holds no base32 secret, a restart reads the key file back and the next code signs in, and a
 * start with another key is refused with the accounts named, before it listens.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Secret, TOTP } from 'otpauth';
import { openSqlite } from '../../src/store/sqlite-driver';
import { ApiClient, send } from '../admin/api-client';
import { PASSWORD } from '../admin/fixtures';
import { CLI, exitCode, serveChild, type ServedChild } from '../helpers/serve-child';

const YAML = `version: 1
server:
  host: 127.0.0.1
store:
  url: sqlite:./data/tollgate.db
providers:
  echo:
    protocol: echo
models:
  tollgate-echo:
    family: openai
    routes:
      - provider: echo
    free: true
plugins:
  auth: {}
  translate: {}
  upstream: {}
`;

function codeOf(secret: string, steps = 0): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), period: 30, digits: 6, timestamp: Date.now() + steps * 30_000 });
}

describe('e2e: TOTP secrets sealed at rest under `tollgate serve`', function () {
  this.timeout(60_000);
  let dir: string;
  let served: ServedChild | null = null;
  // No TOLLGATE_SECRET_KEY: the embedded store keeps its own key file.
  const env = { TOLLGATE_ADMIN_PASSWORD: PASSWORD };

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-totp-rest-'));
    writeFileSync(path.join(dir, 'gateway.yaml'), YAML);
  });

  afterEach(async () => {
    if (served === null) return;
    served.child.kill('SIGTERM');
    await exitCode(served.child);
    served = null;
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  let secret = '';
  const database = () => path.join(dir, 'data', 'tollgate.db');
  const keyFile = () => `${database()}.secret-key`;

  it('makes the key file (0600) at the first start and says so; the enrolled secret is not in the database', async () => {
    served = await serveChild(dir, { env });
    expect(served.stdout()).to.include(`generated the key that seals TOTP secrets into ${keyFile()}`);
    expect(statSync(keyFile()).mode & 0o777).to.equal(0o600);

    const admin = await ApiClient.login(served.url, 'admin', PASSWORD);
    const begun = await admin.post('/api/account/2fa', { password: PASSWORD });
    expect(begun.status, begun.text).to.equal(201);
    secret = begun.body.secret as string;
    const confirmed = await admin.post('/api/account/2fa/confirm', { code: codeOf(secret) });
    expect(confirmed.status, confirmed.text).to.equal(200);

    const db = openSqlite(database(), { readonly: true });
    try {
      const rows = db.prepare<[], { secret: string }>('SELECT secret FROM second_factors').all();
      expect(rows).to.have.length(1);
      expect(rows[0].secret).to.match(/^v1:/).and.not.include(secret);
    } finally {
      db.close();
    }
    // Neither the database file nor its WAL holds the secret in any form an authenticator reads.
    for (const file of [database(), `${database()}-wal`]) expect(readFileSync(file).includes(secret), file).to.equal(false);
  });

  it('after a restart, reads the key file back and the next code signs in', async () => {
    const keyBefore = readFileSync(keyFile(), 'utf8');
    served = await serveChild(dir, { env, firstRun: false });
    expect(served.stdout()).to.include(`TOTP secrets are sealed with the key in ${keyFile()}`);
    expect(readFileSync(keyFile(), 'utf8')).to.equal(keyBefore);
    const refused = await send(served.url, 'POST', '/api/session', { body: { login: 'admin', password: PASSWORD } });
    expect(refused.status, refused.text).to.equal(401);
    expect(refused.body.error.code).to.equal('two_factor_required');
    const signedIn = await send(served.url, 'POST', '/api/session', { body: { login: 'admin', password: PASSWORD, code: codeOf(secret, 1) } });
    expect(signedIn.status, signedIn.text).to.equal(200);
  });

  it('refuses to start with another key, naming the account and the way out, and exits 1', () => {
    const run = spawnSync(process.execPath, [CLI, 'serve', '--port', '0'], {
      cwd: dir,
      env: { PATH: process.env.PATH, TOLLGATE_SECRET_KEY: 'c'.repeat(64) },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status, run.stdout + run.stderr).to.equal(1);
    expect(run.stderr).to.include('do not open with TOLLGATE_SECRET_KEY').and.include('(admin)').and.include('tollgate account reset-2fa');
    expect(run.stdout).not.to.include('tollgate is listening');
  });
});

describe('e2e: `tollgate serve` on PostgreSQL without TOLLGATE_SECRET_KEY', function () {
  this.timeout(30_000);

  it('exits 1 at once naming the variable and how to make a key, rather than wait for the store', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-totp-pg-'));
    try {
      // Port 1: nothing answers, so a serve that waited for the store would never exit by itself.
      writeFileSync(path.join(dir, 'gateway.yaml'), YAML.replace('sqlite:./data/tollgate.db', 'postgres://tollgate@127.0.0.1:1/tollgate'));
      const run = spawnSync(process.execPath, [CLI, 'serve', '--port', '0'], { cwd: dir, env: { PATH: process.env.PATH }, encoding: 'utf8', timeout: 20_000 });
      expect(run.status, run.stdout + run.stderr).to.equal(1);
      expect(run.stderr).to.include('TOLLGATE_SECRET_KEY is not set').and.include('openssl rand -base64 32');
      expect(run.stdout).not.to.include('the store is not reachable yet');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
