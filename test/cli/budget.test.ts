/** `tollgate key budget` and `tollgate account budget`, spawned as an operator runs them (needs `npx tsc` first). */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths';
import { SqliteStore } from '../../src/store/sqlite';
import { makeCliFolder } from '../helpers/cli-config';

describe('cli: budgets (spawned)', function () {
  this.timeout(30_000);
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
    ({ dir, configFile, dbFile } = makeCliFolder('tollgate-budget-cli-', path.join('data', 'tollgate.db')));
    expect(tollgate('account', 'create', 'alice').status).to.equal(0);
    expect(tollgate('key', 'create', '--account', 'alice').status).to.equal(0);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it("sets a key's budget, prints it, audits it, and removes it with --none", async () => {
    const keyId = (await withStore((store) => store.listKeys()))[0].id;
    const set = tollgate('key', 'budget', keyId, '--amount', '5.5', '--period', 'day', '--timezone', 'Europe/Berlin');
    expect(set.stderr).to.equal('');
    expect(set.status).to.equal(0);
    expect(set.stdout).to.equal(`key ${keyId}: budget 5.5 a day (Europe/Berlin)\n`);
    expect((await withStore((store) => store.listKeys()))[0].budget).to.deep.equal({ amount: 5_500_000_000n, period: 'day', timezone: 'Europe/Berlin' });
    const audited = await withStore((store) => store.listAudit({ target: keyId, action: 'key.limits' }));
    expect(audited[0].after).to.deep.include({ budget: { amount: '5.5', period: 'day', timezone: 'Europe/Berlin' } });

    const removed = tollgate('key', 'budget', keyId, '--none');
    expect(removed.status).to.equal(0);
    expect(removed.stdout).to.equal(`key ${keyId}: budget none\n`);
    expect((await withStore((store) => store.listKeys()))[0].budget).to.equal(null);
  });

  it("sets an account's budget (UTC by default) and removes it", async () => {
    const set = tollgate('account', 'budget', 'alice', '--amount', '200', '--period', 'month');
    expect(set.status, set.stderr).to.equal(0);
    expect(set.stdout).to.equal('account alice: budget 200 a month (UTC)\n');
    expect((await withStore((store) => store.findAccountByName('alice')))!.budget).to.deep.equal({ amount: 200_000_000_000n, period: 'month', timezone: 'UTC' });
    const audited = await withStore((store) => store.listAudit({ action: 'account.budget' }));
    expect(audited[0]).to.deep.include({ surface: 'cli', before: { budget: null }, after: { budget: { amount: '200', period: 'month', timezone: 'UTC' } } });
    expect(tollgate('account', 'budget', 'alice', '--none').status).to.equal(0);
    expect((await withStore((store) => store.findAccountByName('alice')))!.budget).to.equal(null);
  });

  it('exits 2 with one line for a bad period, time zone or amount, or --none with a budget; 1 for an unknown name', async () => {
    const keyId = (await withStore((store) => store.listKeys()))[0].id;
    const cases: [string[], RegExp][] = [
      [['key', 'budget', keyId, '--amount', '5', '--period', 'fortnight'], /invalid --period "fortnight"/],
      [['key', 'budget', keyId, '--amount', '5', '--period', 'day', '--timezone', 'Mars/Olympus'], /invalid --timezone "Mars\/Olympus"/],
      [['key', 'budget', keyId, '--amount', '0', '--period', 'day'], /invalid budget "0"/],
      [['key', 'budget', keyId, '--period', 'day'], /--amount and --period are required/],
      [['account', 'budget', 'alice', '--none', '--amount', '5'], /--none removes the budget/],
    ];
    for (const [args, message] of cases) {
      const result = tollgate(...args);
      expect(result.status, args.join(' ')).to.equal(2);
      expect(result.stderr).to.match(message);
      expect(result.stderr.trimEnd().split('\n')).to.have.length(1);
    }
    const unknown = tollgate('account', 'budget', 'nobody', '--none');
    expect(unknown.status).to.equal(1);
    expect(unknown.stderr).to.equal('tollgate: no account named "nobody"\n');
    expect((await withStore((store) => store.listKeys()))[0].budget).to.equal(null);
  });

  it("sets a key's and an account's session budget, audits them, removes them with --none, and refuses a period", async () => {
    const keyId = (await withStore((store) => store.listKeys()))[0].id;
    const set = tollgate('key', 'session-budget', keyId, '--amount', '2.5');
    expect(set.status, set.stderr).to.equal(0);
    expect(set.stdout).to.equal(`key ${keyId}: session budget 2.5 a session\n`);
    const key = (await withStore((store) => store.listKeys()))[0];
    expect(key.sessionBudget).to.equal(2_500_000_000n);
    // The operator's, as every limit set from the CLI: the owner can only lower it.
    expect(key.operatorLimits).to.deep.equal({ sessionBudget: 2_500_000_000n });
    const audited = await withStore((store) => store.listAudit({ target: keyId, action: 'key.limits' }));
    expect(audited[0].after).to.deep.include({ session_budget: '2.5' });
    expect(tollgate('key', 'session-budget', keyId, '--none').stdout).to.equal(`key ${keyId}: session budget none\n`);
    expect((await withStore((store) => store.listKeys()))[0].sessionBudget).to.equal(null);

    const account = tollgate('account', 'session-budget', 'alice', '--amount', '10');
    expect(account.status, account.stderr).to.equal(0);
    expect(account.stdout).to.equal('account alice: session budget 10 a session\n');
    expect((await withStore((store) => store.findAccountByName('alice')))!.sessionBudget).to.equal(10_000_000_000n);
    const accountAudit = await withStore((store) => store.listAudit({ action: 'account.budget' }));
    expect(accountAudit[0]).to.deep.include({ surface: 'cli', before: { session_budget: null }, after: { session_budget: '10' } });
    expect(tollgate('account', 'session-budget', 'alice', '--none').status).to.equal(0);
    expect((await withStore((store) => store.findAccountByName('alice')))!.sessionBudget).to.equal(null);

    for (const [args, message] of [
      [['key', 'session-budget', keyId, '--amount', '5', '--period', 'day'], /no period or time zone/],
      [['key', 'session-budget', keyId], /--amount is required/],
      [['account', 'session-budget', 'alice', '--amount', '0'], /invalid session budget "0"/],
    ] as [string[], RegExp][]) {
      const result = tollgate(...args);
      expect(result.status, args.join(' ')).to.equal(2);
      expect(result.stderr).to.match(message);
    }
  });
});
