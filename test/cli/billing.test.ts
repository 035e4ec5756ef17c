import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { unitsToNano } from '../../src/billing/money';
import { hashRedemptionCode, redeem } from '../../src/billing/redemption';
import { StoreBook } from '../../src/billing/store-book';
import { runCli } from '../../src/cli';
import { creditAccountCommand } from '../../src/cli/account-credit';
import { showAccountCommand } from '../../src/cli/account-show';
import { createAccountCommand } from '../../src/cli/accounts';
import { createKeyCommand, setKeyLimitsCommand } from '../../src/cli/keys';
import { verifyLedgerCommand } from '../../src/cli/ledger';
import { createRedemptionCodesCommand, listRedemptionCodesCommand } from '../../src/cli/redeem-codes';
import { SqliteStore } from '../../src/store/sqlite';
import { openSqlite } from '../../src/store/sqlite-driver';
import type { Account, ChargeRecord, CreditRecord, RedeemResult, Store } from '../../src/store/store';
import { useMemoryStore } from '../helpers/memory-store';
import { rejection } from '../helpers/async';
import { makeCliFolder } from '../helpers/cli-config';
import { PLAIN_CHARGE } from '../helpers/charges';

const CODE_LINE = /^tg-[A-Z2-7]{24}$/;

function capture(): { lines: string[]; out: (line: string) => void } {
  const lines: string[] = [];
  return { lines, out: (line) => lines.push(line) };
}

/** A book that remembers every credit its redemptions produced, as a live balance kept elsewhere would. */
class ApplyingBook extends StoreBook {
  readonly applied: CreditRecord[] = [];
  override async redeem(codeHash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    const result = await super.redeem(codeHash, accountId, actor);
    if (result.ok) this.applied.push(result.credit);
    return result;
  }
}

function charge(account: Account, keyId: string, n: number, cost: string): ChargeRecord {
  return {
    requestId: `req_${n}`,
    accountId: account.id,
    keyId,
    model: `model-${n}`,
    provider: 'echo',
    endpoint: '/v1/chat/completions',
    inputTokens: 100 + n,
    cacheWriteTokens: 2, cacheWrite1hTokens: 0,
    cacheReadTokens: 3,
    outputTokens: 40 + n,
    imageInputTokens: 0,
    imageOutputTokens: 0,
    cost: unitsToNano(cost),
    ...PLAIN_CHARGE,
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 12,
    createdAt: new Date(Date.UTC(2030, 0, 1, 0, 0, n)),
  };
}

async function credit(store: Store, account: string, amount: string, note = 'test'): Promise<CreditRecord> {
  return creditAccountCommand(store, new StoreBook(store), { account, amount, note, actor: 'cli:test' }, () => {});
}

describe('cli/billing', () => {
  const memoryStore = useMemoryStore();
  let store: SqliteStore;
  let book: StoreBook;
  let alice: Account;
  beforeEach(async () => {
    store = memoryStore();
    book = new StoreBook(store);
    alice = await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
  });

  describe('account credit', () => {
    it('records an admin credit with actor and note, and prints the new balance', async () => {
      await credit(store, 'alice', '2');
      const { lines, out } = capture();
      const record = await creditAccountCommand(
        store,
        book,
        { account: 'alice', amount: '12.5', note: 'invoice 7', actor: 'cli:ops' },
        out,
      );
      expect(lines).to.deep.equal([`credited 12.5 to alice (${record.id}); balance now 14.5`]);
      expect((await book.balance(alice.id)).balance).to.equal(14_500_000_000n);
      const [latest] = await store.listCredits(alice.id, 1);
      expect(latest).to.include({ id: record.id, amount: 12_500_000_000n, kind: 'admin', actor: 'cli:ops', note: 'invoice 7' });
    });

    it('takes nine decimal places exactly', async () => {
      await credit(store, 'alice', '0.000000001');
      expect((await book.balance(alice.id)).balance).to.equal(1n);
    });

    for (const amount of ['0', '0.0', '-1', 'abc', '', '1e3', '1.0000000001', '1,5', '.5']) {
      it(`refuses the amount "${amount}" with one line and credits nothing`, async () => {
        const error = await rejection(credit(store, 'alice', amount));
        expect(error.message).to.match(/^invalid amount ".*": /);
        expect(error.message).not.to.include('\n');
        expect(await store.listCredits(alice.id)).to.deep.equal([]);
      });
    }

    it('requires a note and an existing account', async () => {
      for (const note of [undefined, '', '   ', 'two\nlines']) {
        const error = await rejection(
          creditAccountCommand(store, book, { account: 'alice', amount: '1', note, actor: 'cli' }, () => {}),
        );
        expect(error.message).to.match(/^a note is required/);
      }
      expect((await rejection(credit(store, 'nobody', '1'))).message).to.equal('no account named "nobody"');
      expect(await store.listCredits(alice.id)).to.deep.equal([]);
    });
  });

  describe('account show', () => {
    it('prints the account, live balance, keys with limits, last 10 requests and last 5 credits', async () => {
      const { record: key } = await createKeyCommand(
        store,
        { account: 'alice', name: 'laptop', spendLimit: '10', models: 'gpt-4o,claude' },
        () => {},
      );
      for (let n = 1; n <= 6; n += 1) await credit(store, 'alice', String(n), `credit ${n}`);
      const charges = Array.from({ length: 12 }, (_, i) => charge(alice, key.id, i + 1, '0.25'));
      expect(await store.recordCharges(charges)).to.equal(12);
      await store.holdFunds({ requestId: 'req_open', accountId: alice.id, keyId: key.id, amount: 500_000_000n, expiresAt: new Date(Date.now() + 60_000) });

      const { lines, out } = capture();
      await showAccountCommand(store, book, 'alice', out);
      const text = lines.join('\n');
      expect(lines.slice(0, 6)).to.deep.equal([
        'account alice',
        `  id        ${alice.id}`,
        '  role      user',
        '  disabled  no',
        // 1+…+6 = 21 credited, 12 × 0.25 = 3 charged.
        '  balance   18',
        '  held      0.5',
      ]);
      expect(lines[6]).to.equal('keys:');
      expect(lines[7]).to.match(/^ {2}ID\s+NAME\s+KEY\s+SPEND LIMIT\s+SPENT\s+MODELS\s+STATUS$/);
      expect(lines[8]).to.match(new RegExp(`^  ${key.id}\\s+laptop\\s+sk-\\w{4}…\\w{4}\\s+10\\s+3\\s+gpt-4o,claude\\s+active$`));

      const requests = lines.indexOf('last 10 requests:');
      expect(lines[requests + 1]).to.match(/TIME\s+MODEL\s+INPUT\s+CACHE WRITE\s+CACHE READ\s+OUTPUT\s+COST\s+OVERAGE\s+USAGE\s+STATUS/);
      const requestRows = lines.slice(requests + 2, requests + 12);
      expect(requestRows[0]).to.match(/^ {2}2030-01-01 00:00:12Z\s+model-12\s+112\s+2\s+3\s+52\s+0\.25\s+-\s+upstream\s+200 delivered$/);
      expect(requestRows[9]).to.include('model-3');
      expect(text).not.to.match(/model-2\b/);

      const credits = lines.indexOf('last 5 credits:');
      expect(credits).to.equal(requests + 12);
      expect(lines[credits + 1]).to.match(/TIME\s+KIND\s+AMOUNT\s+ACTOR\s+NOTE/);
      expect(lines.slice(credits + 2)).to.have.length(5);
      expect(lines[credits + 2]).to.match(/admin\s+6\s+cli:test\s+credit 6$/);
      expect(text).not.to.include('credit 1');
    });

    it('says none for an empty account and refuses an unknown one', async () => {
      const { lines, out } = capture();
      await showAccountCommand(store, book, 'alice', out);
      expect(lines.slice(4)).to.deep.equal(['  balance   0', '  held      0', 'keys: none', 'last 10 requests: none', 'last 5 credits: none']);
      expect((await rejection(showAccountCommand(store, book, 'nobody', out))).message).to.equal('no account named "nobody"');
    });
  });

  describe('redeem-codes', () => {
    async function makeCodes(count: string, amount = '5', expiresDays?: string, now?: Date) {
      const { lines, out } = capture();
      const made = await createRedemptionCodesCommand(store, { amount, count, expiresDays, actor: 'cli' }, out, now);
      return { ...made, lines };
    }

    it('prints a header and then the codes as the last N lines; stores only their hashes', async () => {
      const { codes, records, lines } = await makeCodes('3', '7.5', '30');
      expect(lines).to.have.length(5);
      expect(lines.slice(-3)).to.deep.equal(codes);
      for (const code of codes) expect(code).to.match(CODE_LINE);
      expect(new Set(codes).size).to.equal(3);
      expect(lines[0]).to.match(/^created 3 redemption codes worth 7\.5 each, expiring \d{4}-\d\d-\d\d \d\d:\d\dZ\.$/);
      expect(lines[1]).to.match(/shown only this once/);
      expect(records.map((record) => record.amount)).to.deep.equal([7_500_000_000n, 7_500_000_000n, 7_500_000_000n]);
      const days = (records[0].expiresAt!.getTime() - records[0].createdAt.getTime()) / 86_400_000;
      expect(days).to.be.closeTo(30, 0.01);

      const listed = capture();
      await listRedemptionCodesCommand(store, listed.out);
      const text = listed.lines.join('\n');
      expect(listed.lines[0]).to.match(/^ID\s+AMOUNT\s+CREATED\s+BY\s+EXPIRES\s+STATUS\s+REDEEMED BY\s+REDEEMED AT$/);
      expect(listed.lines).to.have.length(4);
      for (const code of codes) expect(text).not.to.include(code.slice(3));
      for (const record of records) expect(text).to.include(record.id);
    });

    it('a code redeems once: credit recorded, then "used"; the list shows who redeemed it', async () => {
      const { codes, records } = await makeCodes('1', '5');
      const first = await redeem(book, `  ${codes[0]}\n`, alice.id, 'alice');
      expect(first.ok).to.equal(true);
      expect((await book.balance(alice.id)).balance).to.equal(5_000_000_000n);
      const [recorded] = await store.listCredits(alice.id);
      expect(recorded).to.include({ kind: 'redemption', amount: 5_000_000_000n, actor: 'alice' });

      expect(await redeem(book, codes[0], alice.id, 'alice')).to.deep.equal({ ok: false, reason: 'used' });
      expect((await book.balance(alice.id)).balance).to.equal(5_000_000_000n);

      const listed = capture();
      await listRedemptionCodesCommand(store, listed.out);
      expect(listed.lines[1]).to.include(records[0].id).and.to.include('redeemed').and.to.include(alice.id);
    });

    it('codes are case-sensitive, unknown codes are "unknown", past expiry is "expired"', async () => {
      const { codes } = await makeCodes('1');
      expect(await redeem(book, codes[0].toLowerCase(), alice.id, null)).to.deep.equal({ ok: false, reason: 'unknown' });
      const old = await makeCodes('1', '5', '1', new Date(Date.now() - 2 * 86_400_000));
      expect(await redeem(book, old.codes[0], alice.id, null)).to.deep.equal({ ok: false, reason: 'expired' });
      expect(await store.listCredits(alice.id)).to.deep.equal([]);
    });

    it('20 concurrent redemptions of one code make exactly one credit, applied to the book once', async () => {
      const applying = new ApplyingBook(store);
      const { codes } = await makeCodes('1', '2.25');
      const results = await Promise.all(Array.from({ length: 20 }, () => redeem(applying, codes[0], alice.id, 'alice')));
      expect(results.filter((result) => result.ok)).to.have.length(1);
      expect(results.filter((result) => !result.ok && result.reason === 'used')).to.have.length(19);
      expect(await store.listCredits(alice.id)).to.have.length(1);
      expect(applying.applied).to.have.length(1);
      expect(applying.applied[0].amount).to.equal(2_250_000_000n);
      expect((await store.balance(alice.id)).balance).to.equal(2_250_000_000n);
    });

    it('hashRedemptionCode trims but keeps case', () => {
      expect(hashRedemptionCode(' tg-ABC \n').equals(hashRedemptionCode('tg-ABC'))).to.equal(true);
      expect(hashRedemptionCode('tg-abc').equals(hashRedemptionCode('tg-ABC'))).to.equal(false);
    });

    it('refuses bad amounts, counts and expiries before storing anything', async () => {
      const cases: [string, string, string | undefined, RegExp][] = [
        ['0', '1', undefined, /^invalid amount "0"/],
        ['-2', '1', undefined, /^invalid amount "-2"/],
        ['x', '1', undefined, /^invalid amount "x"/],
        ['1', '0', undefined, /^invalid --count "0"/],
        ['1', '1001', undefined, /^invalid --count "1001"/],
        ['1', '2.5', undefined, /^invalid --count "2.5"/],
        ['1', '1', '0', /^invalid --expires-days "0"/],
        ['1', '1', 'soon', /^invalid --expires-days "soon"/],
      ];
      for (const [amount, count, expiresDays, message] of cases) {
        expect((await rejection(makeCodes(count, amount, expiresDays))).message).to.match(message);
      }
      expect(await store.listRedemptionCodes()).to.deep.equal([]);
      const listed = capture();
      await listRedemptionCodesCommand(store, listed.out);
      expect(listed.lines).to.deep.equal(['no redemption codes']);
    });
  });

  describe('key limits', () => {
    it('key create takes --spend-limit and --models and prints them before the key', async () => {
      const { lines, out } = capture();
      const { key, record } = await createKeyCommand(store, { account: 'alice', spendLimit: '2.5', models: ' a, b ,a,' }, out);
      expect(lines[0]).to.equal(`created key ${record.id} for account alice (spend limit 2.5, models a,b, rate limits none)`);
      expect(lines[lines.length - 1]).to.equal(key);
      const [stored] = await store.listKeys();
      expect(stored.spendLimit).to.equal(2_500_000_000n);
      expect(stored.models).to.deep.equal(['a', 'b']);
    });

    it('key create refuses a bad limit or model list and creates no key', async () => {
      for (const input of [{ spendLimit: '0' }, { spendLimit: 'lots' }, { spendLimit: '1.1234567891' }, { models: ' , ' }, { models: 'a b' }]) {
        const error = await rejection(createKeyCommand(store, { account: 'alice', ...input }, () => {}));
        expect(error.message).to.match(/^invalid (spend limit|model)/);
      }
      expect(await store.listKeys()).to.deep.equal([]);
    });

    it('key limits changes one setting at a time, and none/all clear them', async () => {
      const { record } = await createKeyCommand(store, { account: 'alice', spendLimit: '1', models: 'a' }, () => {});
      const { lines, out } = capture();
      await setKeyLimitsCommand(store, { id: record.id, spendLimit: '4' }, out);
      expect(lines).to.deep.equal([`key ${record.id}: spend limit 4 (spent 0), models a, rate limits none`]);
      expect((await store.listKeys())[0]).to.include({ spendLimit: 4_000_000_000n });
      expect((await store.listKeys())[0].models).to.deep.equal(['a']);

      await setKeyLimitsCommand(store, { id: record.id, models: 'b,c' }, out);
      expect((await store.listKeys())[0]).to.include({ spendLimit: 4_000_000_000n });
      expect((await store.listKeys())[0].models).to.deep.equal(['b', 'c']);

      await setKeyLimitsCommand(store, { id: record.id, spendLimit: 'none', models: 'all' }, out);
      expect(lines[lines.length - 1]).to.equal(`key ${record.id}: spend limit none (spent 0), models all, rate limits none`);
      expect((await store.listKeys())[0]).to.include({ spendLimit: null, models: null });
    });

    it('key limits refuses no flags, bad values and unknown keys', async () => {
      const { record } = await createKeyCommand(store, { account: 'alice', spendLimit: '1' }, () => {});
      expect((await rejection(setKeyLimitsCommand(store, { id: record.id }, () => {}))).message).to.match(/^nothing to change/);
      expect((await rejection(setKeyLimitsCommand(store, { id: record.id, spendLimit: '-1' }, () => {}))).message).to.match(
        /^invalid spend limit/,
      );
      expect((await rejection(setKeyLimitsCommand(store, { id: 'key_missing', models: 'a' }, () => {}))).message).to.equal(
        'no key with id "key_missing"',
      );
      expect((await store.listKeys())[0]).to.include({ spendLimit: 1_000_000_000n, models: null });
    });
  });
});

describe('cli/billing on a database file', () => {
  let dir: string;
  let dbFile: string;
  let configFile: string;
  let store: SqliteStore;

  beforeEach(async () => {
    ({ dir, configFile, dbFile } = makeCliFolder('tollgate-billing-'));
    store = new SqliteStore(dbFile);
    await store.migrate();
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the CLI in process against the temp config; returns exit code and output lines. */
  async function tollgate(...argv: string[]) {
    const out = capture();
    const err = capture();
    const status = await runCli([...argv, '--config', configFile], { out: out.out, err: err.out, env: { USER: 'ops' }, cwd: dir });
    return { status, out: out.lines, err: err.lines };
  }

  /** Runs SQL on the file behind the store's back, as a hand edit or a bug would. */
  function tamper(sql: string): void {
    const db = openSqlite(dbFile);
    try {
      db.prepare(sql).run();
    } finally {
      db.close();
    }
  }

  it('ledger verify passes, then reports DRIFT and exits 1 once a balance is edited by hand', async () => {
    const alice = await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
    await createAccountCommand(store, { name: 'bob', admin: false }, () => {});
    const { record: key } = await createKeyCommand(store, { account: 'alice' }, () => {});
    await credit(store, 'alice', '10');
    await store.recordCharges([charge(alice, key.id, 1, '2.5')]);

    const { lines, out } = capture();
    expect(await verifyLedgerCommand(store, out)).to.deep.equal({ accounts: 2, drifted: 0 });
    expect(lines).to.deep.equal(['OK     alice: balance 7.5, held 0', 'OK     bob: balance 0, held 0', 'ledger OK: 2 accounts checked']);
    const passing = await tollgate('ledger', 'verify');
    expect(passing.status).to.equal(0);
    expect(passing.out).to.deep.equal(lines);

    tamper(`UPDATE accounts SET balance = balance + 1 WHERE name = 'alice'`);
    tamper(`UPDATE accounts SET held = 3 WHERE name = 'bob'`);
    const drifted = capture();
    expect(await verifyLedgerCommand(store, drifted.out)).to.deep.equal({ accounts: 2, drifted: 2 });
    expect(drifted.lines[0]).to.equal(
      `DRIFT  alice (${alice.id}): balance 7.500000001 but credits 10 − charges 2.5 = 7.5 (off by 0.000000001)`,
    );
    expect(drifted.lines[1]).to.match(/^DRIFT {2}bob \(acc_\w+\): held 0\.000000003 but open holds total 0$/);
    expect(drifted.lines[2]).to.equal('ledger DRIFT: 2 of 2 accounts differ from their ledger');
    const failing = await tollgate('ledger', 'verify');
    expect(failing.status).to.equal(1);
    expect(failing.out).to.deep.equal(drifted.lines);
  });

  it('redeem-codes create prints the codes as the last N lines, recorded as made by cli:$USER', async () => {
    const result = await tollgate('redeem-codes', 'create', '--amount', '3', '--count', '4', '--expires-days', '7');
    expect(result.err).to.deep.equal([]);
    expect(result.status).to.equal(0);
    const codes = result.out.slice(-4);
    for (const code of codes) expect(code).to.match(CODE_LINE);
    expect(result.out.slice(0, -4).join('\n')).not.to.match(/tg-/);
    const stored = await store.listRedemptionCodes();
    expect(stored).to.have.length(4);
    expect(stored.every((code) => code.createdBy === 'cli:ops')).to.equal(true);
    const alice = await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
    expect((await redeem(new StoreBook(store), codes[2], alice.id, 'alice')).ok).to.equal(true);
  });

  it('usage errors exit 2 with one line', async () => {
    const cases: [string[], RegExp][] = [
      [['redeem-codes', 'create', '--amount', '3'], /--amount and --count are required/],
      [['account', 'credit', 'alice', '5'], /--note is required/],
      [['account', 'credit', 'alice'], /missing argument/],
      [['key', 'limits'], /missing argument/],
      [['ledger', 'check'], /usage: tollgate ledger verify/],
      [['redeem-codes', 'list', '--limit', '0'], /--limit must be a whole number/],
    ];
    for (const [argv, message] of cases) {
      const result = await tollgate(...argv);
      expect(result.status, argv.join(' ')).to.equal(2);
      expect(result.err).to.have.length(1);
      expect(result.err[0]).to.match(message);
    }
  });

  it('a bad amount is a usage error: exits 2 with one line and changes nothing', async () => {
    await createAccountCommand(store, { name: 'alice', admin: false }, () => {});
    const result = await tollgate('redeem-codes', 'create', '--amount', '0.0000000001', '--count', '1');
    expect(result.status).to.equal(2);
    expect(result.err).to.deep.equal(['tollgate: invalid amount "0.0000000001": use a decimal number of units with at most 9 decimal places']);
    expect(await store.listRedemptionCodes()).to.deep.equal([]);
  });
});
