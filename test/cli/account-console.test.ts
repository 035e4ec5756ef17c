import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { verifyPassword } from '../../src/auth/passwords';
import { hashSecret } from '../../src/admin/secrets';
import { runCli } from '../../src/cli';
import { SqliteStore } from '../../src/store/sqlite';
import { makeCliFolder } from '../helpers/cli-config';

describe('cli/account console access (create with a password, password, token)', function () {
  // Each password costs one scrypt hash (~0.3 s).
  this.timeout(20_000);
  let dir: string;
  let configFile: string;
  let store: SqliteStore;

  beforeEach(async () => {
    let dbFile: string;
    ({ dir, configFile, dbFile } = makeCliFolder('tollgate-console-cli-'));
    store = new SqliteStore(dbFile);
    await store.migrate();
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function tollgate(argv: string[], stdin?: string) {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (line: string) => out.push(line),
      err: (line: string) => err.push(line),
      env: {},
      cwd: dir,
      ...(stdin === undefined ? {} : { readStdin: async () => stdin }),
    };
    const status = await runCli([...argv, '--config', configFile], io);
    return { status, out, err };
  }

  function printedPassword(lines: readonly string[]): string {
    const line = lines.find((candidate) => candidate.startsWith('console password: '));
    expect(line, lines.join('\n')).to.be.a('string');
    return /^console password: (\S+)/.exec(line!)![1];
  }

  it('creates an admin with a generated password that logs in, shown once', async () => {
    const result = await tollgate(['account', 'create', 'ops', '--admin', '--email', 'Ops@Example.com']);
    expect(result.status, result.err.join('\n')).to.equal(0);
    const password = printedPassword(result.out);
    expect(password).to.have.length(20);
    const login = await store.findLogin('ops@example.com');
    expect(login?.account.role).to.equal('admin');
    expect(login?.account.email).to.equal('ops@example.com');
    expect(await verifyPassword(password, login!.passwordHash!)).to.equal(true);
    expect(result.out.join('\n')).not.to.include(login!.passwordHash!);
  });

  it('takes the password from standard input with --password-stdin, and refuses a short one', async () => {
    const created = await tollgate(['account', 'create', 'bob', '--password-stdin'], 'a long enough secret\n');
    expect(created.status, created.err.join('\n')).to.equal(0);
    expect(created.out.join('\n')).not.to.include('console password');
    const login = await store.findLogin('bob');
    expect(await verifyPassword('a long enough secret', login!.passwordHash!)).to.equal(true);

    const short = await tollgate(['account', 'create', 'carol', '--password-stdin'], 'short\n');
    expect(short.status).to.equal(1);
    expect(short.err.join('\n')).to.match(/at least 10 characters/);
    expect(await store.findLogin('carol')).to.equal(null);
  });

  it('refuses an e-mail address that is not one', async () => {
    const result = await tollgate(['account', 'create', 'dave', '--email', 'not-an-address']);
    expect(result.status).to.equal(1);
    expect(result.err.join('\n')).to.match(/not an e-mail address/);
    expect(await store.findAccountByName('dave')).to.equal(null);
  });

  it('sets a new password: the old one stops working', async () => {
    const created = await tollgate(['account', 'create', 'erin']);
    const first = printedPassword(created.out);
    const reset = await tollgate(['account', 'password', 'erin']);
    expect(reset.status, reset.err.join('\n')).to.equal(0);
    const second = printedPassword(reset.out);
    const { passwordHash } = (await store.findLogin('erin'))!;
    expect(await verifyPassword(second, passwordHash!)).to.equal(true);
    expect(await verifyPassword(first, passwordHash!)).to.equal(false);
    expect((await tollgate(['account', 'password', 'nobody'])).status).to.equal(1);
  });

  it('prints a management token that the store knows as a token of the account', async () => {
    await tollgate(['account', 'create', 'frank', '--password-stdin'], 'another long secret');
    const result = await tollgate(['account', 'token', 'frank', '--name', 'deploy-script']);
    expect(result.status, result.err.join('\n')).to.equal(0);
    const token = result.out.at(-1)!;
    expect(token).to.match(/^tgm_[A-Za-z0-9_-]{43}$/);
    const found = await store.findSession(hashSecret(token), new Date());
    expect(found?.account.name).to.equal('frank');
    expect(found?.session.kind).to.equal('token');
    expect(found?.session.name).to.equal('deploy-script');
    // 90 days unless --days says otherwise.
    expect(found!.session.expiresAt!.getTime() - Date.now()).to.be.within(89.9 * 86_400_000, 90 * 86_400_000);
  });
});
