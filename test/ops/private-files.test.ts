/**
 * What Tollgate writes is for its own user alone: its folders 0700, its files 0600 (the store and its
 * WAL, the outbox's segments and lock, the pid file), whatever the umask; an older, looser folder or
 * file is named at start with the chmod that fixes it.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { writePidFile } from '../../src/cli/reload';
import { parseConfig } from '../../src/config/load';
import { startGateway } from '../../src/gateway';
import { captureLogger } from '../helpers/capture-logger';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

function mode(file: string): string {
  return `0${(statSync(file).mode & 0o777).toString(8)}`;
}

function yaml(upstreamUrl: string, data: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite:${data}/tollgate.db" }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 100, context_window: 200000 }
plugins:
  billing: { outbox_path: "${data}/outbox" }
`;
}

describe('ops: the files Tollgate makes are its user\'s alone', function () {
  this.timeout(20_000);
  let folder: string;
  let fake: FakeUpstream;
  const umask = process.umask();

  before(async () => {
    fake = await startFakeUpstream();
    folder = mkdtempSync(path.join(tmpdir(), 'tollgate-modes-'));
    // The usual umask, which would leave everything readable by others.
    process.umask(0o022);
  });

  after(async () => {
    process.umask(umask);
    await fake?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('makes the data folder and the outbox 0700, the database, its WAL, the outbox files and the pid file 0600', async () => {
    const data = path.join(folder, 'fresh', 'data');
    const lines: string[] = [];
    const gateway = await startGateway({ config: parseConfig(yaml(fake.url, data), 'modes.yaml', {}), port: 0, logger: captureLogger('info', lines) });
    try {
      expect(mode(data), 'data/').to.equal('0700');
      for (const file of ['tollgate.db', 'tollgate.db-wal', 'tollgate.db-shm']) expect(mode(path.join(data, file)), file).to.equal('0600');
      const outbox = path.join(data, 'outbox');
      expect(mode(outbox), 'data/outbox').to.equal('0700');
      const inOutbox = readdirSync(outbox);
      expect(inOutbox, 'the outbox has its lock').to.include('lock');
      for (const file of inOutbox) expect(mode(path.join(outbox, file)), `outbox/${file}`).to.equal('0600');
      expect(lines.filter((line) => line.includes('readable by other users')), 'nothing to warn of').to.deep.equal([]);
    } finally {
      await gateway.stop(100);
    }
    const pidFile = path.join(folder, 'fresh', 'run', 'tollgate.pid');
    writePidFile(pidFile, 'gateway.yaml');
    expect(mode(pidFile), 'the pid file').to.equal('0600');
    expect(mode(path.dirname(pidFile)), 'its folder').to.equal('0700');
  });

  it('names an older folder and database that others can read, with the chmod that fixes each', async () => {
    const data = path.join(folder, 'older');
    mkdirSync(data, { mode: 0o755 });
    chmodSync(data, 0o755);
    writeFileSync(path.join(data, 'tollgate.db'), '');
    chmodSync(path.join(data, 'tollgate.db'), 0o644);
    const lines: string[] = [];
    const gateway = await startGateway({ config: parseConfig(yaml(fake.url, data), 'modes.yaml', {}), port: 0, logger: captureLogger('info', lines) });
    await gateway.stop(100);
    const warnings = lines.filter((line) => line.includes('readable by other users'));
    expect(warnings.some((line) => line.includes(`${data} is readable by other users (mode 0755); run chmod 700`)), warnings.join('\n')).to.equal(true);
    expect(warnings.some((line) => line.includes(`${path.join(data, 'tollgate.db')} is readable by other users (mode 0644); run chmod 600`)), warnings.join('\n')).to.equal(true);
    expect(mode(path.join(data, 'tollgate.db')), 'left as it was').to.equal('0644');
  });
});
