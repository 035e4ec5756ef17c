import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { hashApiKey } from '../../src/auth/keys';
import { createAccountCommand } from '../../src/cli/accounts';
import { keyStatus } from '../../src/auth/issue-key';
import { createKeyCommand, listKeysCommand, revokeKeyCommand } from '../../src/cli/keys';
import { PACKAGE_ROOT } from '../../src/paths';
import { SqliteStore } from '../../src/store/sqlite';
import { useMemoryStore } from '../helpers/memory-store';
import type { ApiKeyRecord } from '../../src/store/store';
import { rejection } from '../helpers/async';
import { makeCliFolder } from '../helpers/cli-config';

const KEY_LINE = /^sk-[A-Za-z0-9]{48}$/;

/** An output function that remembers its lines. */
function capture(): { lines: string[]; out: (line: string) => void } {
  const lines: string[] = [];
  return { lines, out: (line) => lines.push(line) };
}

describe('cli/keys', () => {
  const memoryStore = useMemoryStore();
  let store: SqliteStore;
  beforeEach(() => {
    store = memoryStore();
  });

  it('account create prints the new account and refuses a duplicate or invalid name', async () => {
    const { lines, out } = capture();
    const account = await createAccountCommand(store, { name: 'alice', admin: true }, out);
    expect(account.role).to.equal('admin');
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/^console password: \S{20} {3}\(shown once\)$/);
    expect(lines[1]).to.equal(`created account alice (${account.id}, role admin)`);
    expect((await rejection(createAccountCommand(store, { name: 'alice', admin: false }, out))).message).to.match(
      /already exists/,
    );
    expect((await rejection(createAccountCommand(store, { name: 'has space', admin: false }, out))).message).to.match(
      /invalid account name/,
    );
  });

  it('key create prints the key as the last line, and the key hashes to the stored record', async () => {
    await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
    const { lines, out } = capture();
    const { key, record } = await createKeyCommand(store, { account: 'alice', name: 'laptop' }, out);
    const last = lines[lines.length - 1];
    expect(last).to.equal(key);
    expect(last).to.match(KEY_LINE);
    expect(lines.slice(0, -1).join('\n')).not.to.include(key);
    const identity = await store.findKeyByHash(hashApiKey(last));
    expect(identity?.key.id).to.equal(record.id);
    expect(identity?.account.name).to.equal('alice');
    expect(identity?.key.name).to.equal('laptop');
  });

  it('key create refuses an unknown account', async () => {
    const error = await rejection(createKeyCommand(store, { account: 'nobody' }, () => {}));
    expect(error.message).to.equal('no account named "nobody"');
    expect(await store.listKeys()).to.deep.equal([]);
  });

  it('key list shows prefix…last4 and status, never the full key', async () => {
    await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
    await createAccountCommand(store, { name: 'bob', admin: false }, () => {});
    const first = await createKeyCommand(store, { account: 'alice', name: 'one' }, () => {});
    const second = await createKeyCommand(store, { account: 'bob' }, () => {});
    await revokeKeyCommand(store, first.record.id, () => {});

    const { lines, out } = capture();
    await listKeysCommand(store, {}, out);
    const text = lines.join('\n');
    expect(lines[0]).to.match(/^ID\s+ACCOUNT\s+NAME\s+KEY\s+CREATED\s+STATUS$/);
    expect(lines).to.have.length(3);
    for (const { key } of [first, second]) {
      expect(text).not.to.include(key);
      expect(text).to.include(`${key.slice(0, 7)}…${key.slice(-4)}`);
    }
    expect(lines[1]).to.include(first.record.id).and.to.match(/revoked$/);
    expect(lines[2]).to.include(second.record.id).and.to.match(/active$/);

    const forBob = capture();
    await listKeysCommand(store, { account: 'bob' }, forBob.out);
    expect(forBob.lines).to.have.length(2);
    expect(forBob.lines[1]).to.include('bob');
  });

  it('key list says so when there are no keys', async () => {
    const { lines, out } = capture();
    await listKeysCommand(store, {}, out);
    expect(lines).to.deep.equal(['no keys']);
  });

  it('key revoke prints the id, and an unknown id is an error', async () => {
    await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
    const { record } = await createKeyCommand(store, { account: 'alice' }, () => {});
    const { lines, out } = capture();
    await revokeKeyCommand(store, record.id, out);
    expect(lines).to.deep.equal([`revoked ${record.id}`]);
    expect((await store.listKeys())[0].revokedAt).to.be.instanceOf(Date);
    expect((await rejection(revokeKeyCommand(store, 'key_0000000000000000', out))).message).to.match(/no key with id/);
  });

  it('keyStatus puts revoked before expired', () => {
    const now = new Date('2030-01-01T00:00:00Z');
    const base: ApiKeyRecord = {
      id: 'key_x', accountId: 'acc_x', name: null, prefix: 'sk-abcd', last4: 'wxyz',
      createdAt: new Date(0), revokedAt: null, expiresAt: null, spendLimit: null, spent: 0n, models: null, rateLimits: null, budget: null, sessionBudget: null, allowedNetworks: null, operatorLimits: null,
    };
    expect(keyStatus(base, now.getTime())).to.equal('active');
    expect(keyStatus({ ...base, expiresAt: new Date('2029-01-01T00:00:00Z') }, now.getTime())).to.equal('expired');
    expect(keyStatus({ ...base, expiresAt: new Date('2031-01-01T00:00:00Z') }, now.getTime())).to.equal('active');
    expect(keyStatus({ ...base, revokedAt: new Date(1), expiresAt: new Date(2) }, now.getTime())).to.equal('revoked');
  });

  describe('bin/tollgate.js (spawned, needs `npx tsc` first)', function () {
    this.timeout(30_000);
    let dir: string;
    let configFile: string;
    let dbFile: string;

    function tollgate(...args: string[]) {
      const env: NodeJS.ProcessEnv = { ...process.env };
      delete env.TOLLGATE_CONFIG;
      delete env.PORT;
      const result = spawnSync(process.execPath, [path.join(PACKAGE_ROOT, 'bin', 'tollgate.js'), ...args], {
        cwd: dir,
        env,
        encoding: 'utf8',
      });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    }

    before(() => {
      ({ dir, configFile, dbFile } = makeCliFolder('tollgate-cli-', path.join('data', 'tollgate.db')));
    });

    after(() => {
      rmSync(dir, { recursive: true, force: true });
    });

    it('key create prints the key as the last line of stdout and exits 0', async () => {
      const account = tollgate('account', 'create', 'alice', '--config', configFile);
      expect(account.stderr).to.equal('');
      expect(account.status).to.equal(0);

      // No --config: ./gateway.yaml in the working directory is the default.
      const created = tollgate('key', 'create', '--account', 'alice', '--name', 'spawned');
      expect(created.stderr).to.equal('');
      expect(created.status).to.equal(0);
      const lines = created.stdout.trimEnd().split('\n');
      const key = lines[lines.length - 1];
      expect(key).to.match(KEY_LINE);

      const store = new SqliteStore(dbFile);
      try {
        const identity = await store.findKeyByHash(hashApiKey(key));
        expect(identity?.account.name).to.equal('alice');
        expect(identity?.key.name).to.equal('spawned');
      } finally {
        await store.close();
      }

      const listed = tollgate('key', 'list');
      expect(listed.status).to.equal(0);
      expect(listed.stdout).not.to.include(key);
    });

    it('exits 1 with one line on stderr for an unknown key id', () => {
      const result = tollgate('key', 'revoke', 'key_0000000000000000');
      expect(result.status).to.equal(1);
      expect(result.stdout).to.equal('');
      expect(result.stderr).to.equal('tollgate: no key with id "key_0000000000000000"\n');
    });

    it('exits 2 with one line on stderr for a usage error', () => {
      const missing = tollgate('key', 'create');
      expect(missing.status).to.equal(2);
      expect(missing.stderr).to.match(/^tollgate: --account is required.*\n$/);
      const unknown = tollgate('frobnicate');
      expect(unknown.status).to.equal(2);
      expect(unknown.stderr).to.equal('tollgate: unknown command "frobnicate"; run "tollgate help"\n');
    });

    it('exits 1 without a stack trace when the config file is missing', () => {
      const result = tollgate('key', 'list', '--config', path.join(dir, 'missing.yaml'));
      expect(result.status).to.equal(1);
      expect(result.stderr).not.to.match(/\n\s+at /);
      expect(result.stderr.trimEnd().split('\n')).to.have.length(1);
    });

    it('prints help on stdout and exits 0', () => {
      const result = tollgate('--help');
      expect(result.status).to.equal(0);
      expect(result.stdout).to.match(/^Usage: tollgate/);
      expect(result.stdout).to.include('key create --account NAME');
    });
  });
});
