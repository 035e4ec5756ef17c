/**
 * The audit log from the CLI: each account-changing command appends an entry as `cli:$USER` on the
 * `cli` surface, and `tollgate audit list` prints the log, filtered, as a table or as CSV.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { runCli } from '../../src/cli';
import type { AuditRecord } from '../../src/store/audit';
import { SqliteStore } from '../../src/store/sqlite';
import { makeCliFolder } from '../helpers/cli-config';

describe('cli/audit', function () {
  // Passwords cost one scrypt hash each (~0.3 s).
  this.timeout(20_000);
  let dir: string;
  let configFile: string;
  let store: SqliteStore;

  beforeEach(async () => {
    let dbFile: string;
    ({ dir, configFile, dbFile } = makeCliFolder('tollgate-audit-cli-'));
    store = new SqliteStore(dbFile);
    await store.migrate();
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function tollgate(...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (line: string) => out.push(line), err: (line: string) => err.push(line), env: { USER: 'oli' }, cwd: dir };
    const status = await runCli([...argv, '--config', configFile], io);
    expect(status, err.join('\n')).to.equal(argv[0] === 'audit' && argv.includes('--action') && argv.includes('nope') ? 2 : 0);
    return { status, out, err };
  }

  async function latest(): Promise<AuditRecord> {
    const [entry] = await store.listAudit({ limit: 1 });
    expect(entry).to.not.equal(undefined);
    expect(entry).to.deep.include({ actor: 'cli:oli', surface: 'cli', requestId: null });
    return entry;
  }

  it('records each account-changing command, never a secret', async () => {
    const created = await tollgate('account', 'create', 'zoe');
    const zoe = (await store.findAccountByName('zoe'))!;
    expect(await latest()).to.deep.include({ action: 'account.create', target: zoe.id, accountId: zoe.id, after: { name: 'zoe', email: null, role: 'user' } });

    await tollgate('account', 'credit', 'zoe', '7.25', '--note', 'wire 12');
    const credit = await latest();
    expect(credit).to.deep.include({ action: 'account.credit', target: zoe.id, before: { balance: '0' } });
    expect(credit.after).to.deep.include({ balance: '7.25', amount: '7.25', note: 'wire 12' });

    const password = await tollgate('account', 'password', 'zoe');
    expect(await latest()).to.deep.include({ action: 'account.password', target: zoe.id, after: { sessions_ended: 0 } });

    const token = await tollgate('account', 'token', 'zoe', '--name', 'deploy');
    const [tokenRecord] = await store.listSessions(zoe.id, 'token');
    expect(await latest()).to.deep.include({ action: 'token.create', target: tokenRecord.id, after: { name: 'deploy' } });

    const key = await tollgate('key', 'create', '--account', 'zoe', '--name', 'ci');
    const [keyRecord] = await store.listKeys({ accountId: zoe.id });
    expect(await latest()).to.deep.include({ action: 'key.create', target: keyRecord.id, accountId: zoe.id });

    await tollgate('key', 'limits', keyRecord.id, '--spend-limit', '3', '--models', 'tollgate-echo');
    expect(await latest()).to.deep.include({
      action: 'key.limits',
      before: { spend_limit: null, models: null, rate_limits: null, budget: null },
      // The CLI's limits are the operator's: recorded apart, so the owner cannot loosen them.
      after: { spend_limit: '3', models: ['tollgate-echo'], rate_limits: null, budget: null, operator_limits: { spend_limit: '3', models: ['tollgate-echo'] } },
    });

    await tollgate('account', 'disable', 'zoe');
    expect(await latest()).to.deep.include({ action: 'account.disable', target: zoe.id, surface: 'cli', before: { disabled: false }, after: { disabled: true, sessions_ended: 1 } });
    await tollgate('account', 'enable', 'zoe');
    expect(await latest()).to.deep.include({ action: 'account.enable', target: zoe.id, surface: 'cli', after: { disabled: false, sessions_ended: 0 } });

    await tollgate('key', 'revoke', keyRecord.id);
    const revoked = await latest();
    expect(revoked).to.deep.include({ action: 'key.revoke', target: keyRecord.id, before: { revoked_at: null } });
    expect(revoked.after!.revoked_at).to.be.a('string');

    const codes = await tollgate('redeem-codes', 'create', '--amount', '2', '--count', '3');
    const batch = await latest();
    expect(batch).to.deep.include({ action: 'code.create', target: null });
    expect(batch.after).to.deep.include({ count: 3, amount: '2', expires_at: null });

    // Secrets the commands printed once: a password, a management token, a key, the codes.
    const printed = [...created.out, ...password.out, ...token.out, ...key.out, ...codes.out.slice(-3)];
    const secrets = printed.flatMap((line) => line.match(/console password: (\S+)|^(tgm_\S+)$|^(sk-\S+)$|^(tg-\S+)$/)?.slice(1).filter(Boolean) ?? []);
    expect(secrets.length).to.be.at.least(6);
    const log = JSON.stringify(await store.listAudit({}));
    for (const secret of secrets) expect(log).to.not.include(secret);
  });

  it('records account disable and enable, which once wrote nothing', async () => {
    await tollgate('account', 'create', 'ned');
    const ned = (await store.findAccountByName('ned'))!;
    await tollgate('account', 'disable', 'ned');
    expect(await latest()).to.deep.include({ action: 'account.disable', target: ned.id, accountId: ned.id, before: { disabled: false } });
    await tollgate('account', 'enable', 'ned');
    expect(await latest()).to.deep.include({ action: 'account.enable', target: ned.id, accountId: ned.id, before: { disabled: true } });
  });

  it('lists the log as a table, filtered by actor, target, action and date, or as CSV', async () => {
    await tollgate('account', 'create', 'yan');
    await tollgate('account', 'credit', 'yan', '1', '--note', 'trial');
    const yan = (await store.findAccountByName('yan'))!;
    await store.appendAudit({ actor: 'root', surface: 'console', action: 'account.disable', target: yan.id, accountId: yan.id, before: { disabled: false }, after: { disabled: true }, requestId: 'req_1' });

    const table = (await tollgate('audit', 'list')).out;
    expect(table[0]).to.match(/^TIME\s+ACTOR\s+VIA\s+ACTION\s+TARGET\s+CHANGE$/);
    expect(table).to.have.length(4);
    expect(table[1]).to.match(/root\s+console\s+account\.disable\s+acc_\w+\s+\{"disabled":false\} -> \{"disabled":true\}$/);

    expect((await tollgate('audit', 'list', '--actor', 'cli:oli')).out).to.have.length(3);
    expect((await tollgate('audit', 'list', '--target', yan.id, '--action', 'account.credit')).out).to.have.length(2);
    const today = new Date().toISOString().slice(0, 10);
    expect((await tollgate('audit', 'list', '--since', today, '--until', today)).out).to.have.length(4);
    expect((await tollgate('audit', 'list', '--until', '2000-01-01')).out).to.deep.equal(['no audit entries match']);

    const csv = (await tollgate('audit', 'list', '--csv', '--action', 'account.disable')).out.join('\n').split('\r\n');
    expect(csv[0]).to.equal('id,at,actor,surface,action,target,account_id,before,after,request_id');
    expect(csv[1]).to.include(',root,console,account.disable,').and.include(',req_1');

    const refused = await tollgate('audit', 'list', '--action', 'nope');
    expect(refused.err.join('\n')).to.match(/--action is one of account\.create/);
  });
});
