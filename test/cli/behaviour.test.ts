/**
 * The command line as an operator meets it: a closed pipe, --version, help for one command, the exit
 * codes, --json listings, account list/disable, per-key rate limits, and one-time codes that are
 * stored only once written out.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { helpText } from '../../src/cli';
import { createKeyCommand } from '../../src/cli/keys';
import { createRedemptionCodesCommand } from '../../src/cli/redeem-codes';
import { PACKAGE_ROOT, PACKAGE_VERSION } from '../../src/paths';
import { SqliteStore } from '../../src/store/sqlite';
import { rejection } from '../helpers/async';
import { makeCliFolder, type CliFolder } from '../helpers/cli-config';

const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');

describe('cli behaviour', function () {
  this.timeout(30_000);
  let folder: CliFolder;

  function tollgate(...args: string[]): { status: number | null; stdout: string; stderr: string } {
    const result = spawnSync(process.execPath, [CLI, ...args, ...(args[0] === 'help' || args[0] === '--version' ? [] : ['--config', folder.configFile])], {
      cwd: folder.dir,
      env: { PATH: process.env.PATH, USER: 'ops' },
      encoding: 'utf8',
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  /** Runs the CLI with its standard output read by a reader that takes the first line and closes. */
  function firstLineThenClose(...args: string[]): Promise<{ status: number | null; stderr: string; first: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args, '--config', folder.configFile], { cwd: folder.dir, env: { PATH: process.env.PATH } });
      let stderr = '';
      let first = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdout.once('data', (chunk: Buffer) => {
        first = chunk.toString().split('\n')[0];
        child.stdout.destroy();
      });
      child.once('close', (status) => resolve({ status, stderr, first }));
    });
  }

  beforeEach(() => {
    folder = makeCliFolder('tollgate-cli-behaviour-');
    expect(tollgate('account', 'create', 'alice').status).to.equal(0);
  });

  afterEach(() => rmSync(folder.dir, { recursive: true, force: true }));

  it('prints its version', () => {
    const result = tollgate('--version');
    expect(result).to.deep.include({ status: 0, stdout: `${PACKAGE_VERSION}\n` });
  });

  it('shows one command\'s help, and the exit codes in the full help', () => {
    const key = tollgate('help', 'key');
    expect(key.status).to.equal(0);
    expect(key.stdout).to.contain('key create --account NAME').and.contain('key revoke ID').and.not.contain('account create');
    expect(helpText('redeem-codes')).to.contain('redemption-codes create');
    expect(helpText()).to.match(/Exit codes:\n {2}0 {2}success[\s\S]*\n {2}2 {2}usage error/);
    const unknown = tollgate('help', 'frobnicate');
    expect(unknown.status).to.equal(2);
  });

  it('ends quietly with 0 when the reader closes the pipe early', async () => {
    // Far more than a pipe's buffer (64 KiB), so the CLI is still writing when the reader has gone.
    const store = new SqliteStore(folder.dbFile);
    try {
      await store.migrate();
      for (let i = 0; i < 2000; i++) await createKeyCommand(store, { account: 'alice', name: `key number ${i}` }, () => {});
    } finally {
      await store.close();
    }
    const result = await firstLineThenClose('key', 'list');
    expect(result.first).to.match(/^ID\s+ACCOUNT/);
    expect(result.stderr).to.equal('');
    expect(result.status).to.equal(0);
  });

  it('stores redemption codes only after their texts were written out, and none when writing failed', async () => {
    const store = new SqliteStore(folder.dbFile);
    try {
      await store.migrate();
      const storedWhilePrinting: number[] = [];
      const out = () => void store.listRedemptionCodes().then((codes) => storedWhilePrinting.push(codes.length));
      const input = { amount: '1', count: '5', actor: 'test' };
      const broken = createRedemptionCodesCommand(store, input, out, new Date(), () => Promise.reject(new Error('EPIPE')));
      expect((await rejection(broken)).message).to.equal('EPIPE');
      expect(await store.listRedemptionCodes()).to.deep.equal([]);

      const { codes } = await createRedemptionCodesCommand(store, input, out, new Date(), async () => {});
      expect(storedWhilePrinting.every((count) => count === 0)).to.equal(true);
      expect(await store.listRedemptionCodes()).to.have.length(codes.length);
    } finally {
      await store.close();
    }
    const written = tollgate('redemption-codes', 'create', '--amount', '1', '--count', '3');
    expect(written.status).to.equal(0);
    expect(JSON.parse(tollgate('redeem-codes', 'list', '--json').stdout)).to.have.length(8);
  });

  it('lists accounts, keys and codes as JSON with money as decimal strings', () => {
    tollgate('account', 'credit', 'alice', '2.5', '--note', 'first');
    tollgate('key', 'create', '--account', 'alice', '--spend-limit', '1.25');
    const accounts = JSON.parse(tollgate('account', 'list', '--json').stdout) as Array<Record<string, unknown>>;
    expect(accounts.find((account) => account.name === 'alice')).to.include({ balance: '2.5', held: '0', disabled: false });
    const keys = JSON.parse(tollgate('key', 'list', '--json').stdout) as Array<Record<string, unknown>>;
    expect(keys[0]).to.include({ spendLimit: '1.25', status: 'active' });
    expect(JSON.stringify(keys)).to.not.match(/"sk-[A-Za-z0-9]{48}"/);
  });

  it('disables and enables an account; account list shows it', () => {
    expect(tollgate('account', 'disable', 'alice').stdout).to.match(/^disabled account alice/);
    expect(tollgate('account', 'list').stdout).to.match(/alice\s+-\s+user\s+disabled/);
    expect(tollgate('account', 'enable', 'alice').status).to.equal(0);
    expect(tollgate('account', 'list').stdout).to.match(/alice\s+-\s+user\s+active/);
    expect(tollgate('account', 'disable', 'nobody').status).to.equal(1);
  });

  it('sets and clears a key\'s own rate limits', () => {
    const created = tollgate('key', 'create', '--account', 'alice', '--rpm', '60', '--concurrency', '2');
    expect(created.stdout).to.contain('rate limits rpm 60, concurrency 2');
    const id = /created key (key_[0-9a-f]+)/.exec(created.stdout)![1];
    expect(tollgate('key', 'limits', id, '--tpm', '1000', '--rpm', 'none').stdout).to.contain('rate limits tpm 1000, concurrency 2');
    const keys = JSON.parse(tollgate('key', 'list', '--json').stdout) as Array<{ rateLimits: unknown }>;
    expect(keys[0].rateLimits).to.deep.equal({ tpm: 1000, concurrency: 2 });
    const bad = tollgate('key', 'limits', id, '--rpm', 'fast');
    expect(bad.status).to.equal(2);
    expect(bad.stderr).to.equal('tollgate: invalid --rpm "fast": use a whole number from 0 (no limit) to 1000000000, or none\n');
  });

  it('exits 2 for a bad amount or count, 1 for something that does not exist', () => {
    expect(tollgate('account', 'credit', 'alice', 'ten', '--note', 'x').status).to.equal(2);
    expect(tollgate('redemption-codes', 'create', '--amount', '1', '--count', '0').status).to.equal(2);
    expect(tollgate('account', 'credit', 'nobody', '1', '--note', 'x').status).to.equal(1);
  });

  it('documents the exit codes where operators look', () => {
    expect(readFileSync(path.join(PACKAGE_ROOT, 'docs', 'operations.md'), 'utf8')).to.contain('Exit codes');
  });
});
