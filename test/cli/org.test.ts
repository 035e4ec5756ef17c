/** `tollgate org create|list|members|invite|role|remove`, spawned as an operator runs them (needs `npx tsc` first). */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { hashSecret } from '../../src/admin/secrets';
import { PACKAGE_ROOT } from '../../src/paths';
import { SqliteStore } from '../../src/store/sqlite';
import { makeCliFolder } from '../helpers/cli-config';

describe('cli: organisations (spawned)', function () {
  this.timeout(60_000);
  let dir: string;
  let configFile: string;
  let dbFile: string;

  function tollgate(...args: string[]) {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.TOLLGATE_CONFIG;
    delete env.PORT;
    const result = spawnSync(process.execPath, [path.join(PACKAGE_ROOT, 'bin', 'tollgate.js'), ...args, '--config', configFile], { cwd: dir, env, encoding: 'utf8' });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  async function withStore<T>(read: (store: SqliteStore) => Promise<T>): Promise<T> {
    const store = new SqliteStore(dbFile);
    try {
      return await read(store);
    } finally {
      await store.close();
    }
  }

  before(() => {
    ({ dir, configFile, dbFile } = makeCliFolder('tollgate-org-cli-', path.join('data', 'tollgate.db')));
    for (const name of ['alice', 'bob']) expect(tollgate('account', 'create', name).status).to.equal(0);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('makes an organisation, invites with a one-time link, changes a role, keeps the last owner, removes a member', async () => {
    const made = tollgate('org', 'create', 'acme', '--owner', 'alice');
    expect(made.stderr).to.equal('');
    expect(made.stdout).to.match(/^organisation acme \(acc_[0-9a-f]{16}\) created; owner alice\n$/);
    expect(tollgate('org', 'list').stdout).to.include('acme');
    const invited = tollgate('org', 'invite', 'acme', 'bob', '--role', 'admin');
    expect(invited.status, invited.stderr).to.equal(0);
    const link = invited.stdout.trim().split('\n').at(-1)!;
    expect(link).to.match(/^\/console\/join#tgi_/);
    const secret = link.split('#')[1];
    await withStore(async (store) => {
      const invitation = (await store.orgs.findInvitation(hashSecret(secret)))!;
      expect(invitation).to.deep.include({ invitee: 'bob', role: 'admin' });
      const bob = (await store.findAccountByName('bob'))!;
      expect((await store.orgs.acceptInvitation(invitation.id, bob.id, new Date())).ok).to.equal(true);
    });
    expect(tollgate('org', 'members', 'acme').stdout).to.match(/alice\s+owner[\s\S]*bob\s+admin/);
    const lastOwner = tollgate('org', 'role', 'acme', 'alice', 'member');
    expect(lastOwner.status).to.equal(1);
    expect(lastOwner.stderr).to.include('at least one owner');
    expect(tollgate('org', 'role', 'acme', 'bob', 'owner').stdout).to.equal('bob is now owner of acme\n');
    expect(tollgate('org', 'remove', 'acme', 'alice').status).to.equal(0);
    expect(JSON.parse(tollgate('org', 'members', 'acme', '--json').stdout).map((member: { name: string }) => member.name)).to.deep.equal(['bob']);
    expect(tollgate('org', 'members', 'alice').stderr).to.include('not an organisation');
    expect(tollgate('org', 'role', 'acme', 'bob', 'boss').status).to.equal(2);
    const audited = await withStore((store) => store.listAudit({ limit: 50 }));
    expect(audited.map((entry) => entry.action)).to.include.members(['org.create', 'org.invite', 'org.role', 'org.remove']);
  });
});
