/** `tollgate statements issue | list`: a closed month issued for every account once, an open one refused. */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { runCli } from '../../src/cli';
import { SqliteStore } from '../../src/store/sqlite';
import { openSqlite } from '../../src/store/sqlite-driver';
import { makeCliFolder, type CliFolder } from '../helpers/cli-config';

async function cli(folder: CliFolder, ...argv: string[]): Promise<{ status: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const status = await runCli([...argv, '--config', folder.configFile], { out: (line) => out.push(line), err: (line) => err.push(line), env: { USER: 'ops' }, cwd: folder.dir });
  return { status, out, err };
}

describe('CLI: statements', () => {
  let folder: CliFolder;

  beforeEach(async () => {
    folder = makeCliFolder('tollgate-cli-statements-');
    const store = new SqliteStore(folder.dbFile);
    await store.migrate();
    for (const name of ['amy', 'bo']) {
      const account = await store.createAccount({ name, role: 'user', email: null, passwordHash: null });
      await store.credit({ accountId: account.id, amount: name === 'amy' ? 1_500_000_001n : 2_000_000_000n, kind: 'admin', actor: 'cli', note: null });
    }
    await store.close();
    // The accounts and their credits date from October 2026, so October and November are closed months.
    const db = openSqlite(folder.dbFile);
    db.exec(`UPDATE accounts SET created_at = ${Date.parse('2026-10-10T00:00:00Z')}; UPDATE credits SET created_at = ${Date.parse('2026-10-11T00:00:00Z')}`);
    db.close();
  });

  afterEach(() => rmSync(folder.dir, { recursive: true, force: true }));

  it('issues a closed month for every account, with the months before it, and again prints the same', async () => {
    const issued = await cli(folder, 'statements', 'issue', '--month', '2026-11');
    expect(issued.status, issued.err.join('\n')).to.equal(0);
    expect(issued.out[0]).to.match(/^NUMBER\s+MONTH\s+ACCOUNT\s+OPENING\s+CLOSING\s+CURRENCY\s+ISSUED$/);
    // October is issued first for each account (so November opens at its closing), then November.
    expect(issued.out.slice(1).map((line) => line.split(/\s+/).slice(0, 5).join(' '))).to.deep.equal([
      'TG-2026-000002 2026-11 amy 1.500000001 1.500000001',
      'TG-2026-000004 2026-11 bo 2 2',
    ]);
    const again = await cli(folder, 'statements', 'issue', '--month', '2026-11');
    expect(again.out).to.deep.equal(issued.out);
    const listed = await cli(folder, 'statements', 'list', '--account', 'amy', '--json');
    const statements = JSON.parse(listed.out.join('\n')) as { number: string; opening: string; closing: string; previous_number: string | null }[];
    expect(statements.slice(-2).map((statement) => [statement.number, statement.opening, statement.closing, statement.previous_number])).to.deep.equal([
      ['TG-2026-000002', '1.500000001', '1.500000001', 'TG-2026-000001'],
      ['TG-2026-000001', '0', '1.500000001', null],
    ]);
  });

  it('refuses a month that has not closed, and a month that is no month', async () => {
    const open = await cli(folder, 'statements', 'issue', '--month', '2099-01');
    expect(open.status).to.equal(1);
    expect(open.err.join('\n')).to.include('2099-01 has not closed yet');
    const wrong = await cli(folder, 'statements', 'issue', '--month', 'November');
    expect(wrong.status).to.equal(2);
    expect(wrong.err.join('\n')).to.include('is not a month such as 2026-11');
  });
});
