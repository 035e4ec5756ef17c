/**
 * `tollgate serve` with its PostgreSQL store not there yet: no crash loop. The process stays up,
 * answers /healthz 200 and /readyz 503 (and 503 JSON elsewhere), and becomes the gateway as soon as
 * the database exists. Skipped, saying so, without PostgreSQL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Client } from 'pg';
import { PACKAGE_ROOT } from '../../src/paths';
import { TEST_SECRET_ENV } from '../helpers/test-secret-key';
import { PG_ADMIN_URL, postgresProblem } from '../helpers/services';

const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read().catch(() => undefined as T);
    if ((value !== undefined && done(value)) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('e2e: serve waits for a store that is not reachable yet', function () {
  this.timeout(30_000);
  let dir: string;
  let child: ChildProcess | null = null;
  const database = `tollgate_test_wait_${randomBytes(4).toString('hex')}`;

  before(async function () {
    const problem = await postgresProblem();
    if (problem !== null) {
      console.log(`      ${problem}: store-wait suite skipped`);
      this.skip();
    }
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-store-wait-'));
  });

  after(async () => {
    child?.kill('SIGTERM');
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    const admin = new Client({ connectionString: PG_ADMIN_URL });
    await admin.connect().catch(() => undefined);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]).catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  });

  it('answers 503 on /readyz while waiting, then serves once the database exists', async () => {
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${database}`;
    writeFileSync(
      path.join(dir, 'gateway.yaml'),
      `server: { host: 127.0.0.1 }\nstore: { url: "${url.toString()}" }\nproviders:\n  echo: { protocol: echo }\nmodels:\n  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }\n`,
    );
    const port = await freePort();
    child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], { cwd: dir, env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...TEST_SECRET_ENV }, stdio: 'ignore' });
    const base = `http://127.0.0.1:${port}`;

    const health = await until(() => fetch(`${base}/healthz`), (res) => res.status === 200, 10_000);
    expect(health.status).to.equal(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).to.equal(503);
    const asked = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(asked.status).to.equal(503);
    expect(((await asked.json()) as { error: { code: string } }).error.code).to.equal('starting');
    expect(child.exitCode, 'still running, not crashed').to.equal(null);

    const admin = new Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();

    const readyAfter = await until(() => fetch(`${base}/readyz`), (res) => res.status === 200, 15_000);
    expect(readyAfter.status).to.equal(200);
  });
});
