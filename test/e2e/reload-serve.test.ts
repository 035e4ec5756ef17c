/**
 * `tollgate reload` and SIGHUP against a real `tollgate serve` child process: the pid file, a reload
 * that adds a model, an invalid file refused before any signal, SIGHUP with an invalid file, and
 * the errors for a missing or stale pid file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { request } from 'undici';
import { waitUntil } from '../helpers/fake-upstream';
import { CLI, exitCode, serveChild, type ServedChild } from '../helpers/serve-child';

function gatewayYaml(models: readonly string[]): string {
  const entries = models.map((id) => `  ${id}:\n    family: openai\n    routes:\n      - provider: echo\n    free: true\n`).join('');
  return `version: 1
server:
  host: 127.0.0.1
store:
  url: sqlite:./data/tollgate.db
providers:
  echo:
    protocol: echo
models:
${entries}plugins:
  auth: {}
  translate: {}
  upstream: {}
`;
}

/** Runs `tollgate reload` in `dir` and returns its exit code and output. */
function reload(dir: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, 'reload', ...args], { cwd: dir, env: { PATH: process.env.PATH }, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function chat(served: ServedChild, model: string): Promise<number> {
  const response = await request(`${served.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${served.key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.body.dump();
  return response.statusCode;
}

describe('e2e: `tollgate reload` and SIGHUP against `tollgate serve`', function () {
  this.timeout(30000);
  let dir: string;
  let config: string;
  let pidFile: string;
  let served: ServedChild;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-reload-serve-'));
    config = path.join(dir, 'gateway.yaml');
    writeFileSync(config, gatewayYaml(['tollgate-echo']));
    served = await serveChild(dir);
    pidFile = path.join(dir, 'data', `tollgate-${new URL(served.url).port}.pid`);
  });

  after(() => {
    served.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes its pid and config file to data/tollgate-<port>.pid', () => {
    expect(readFileSync(pidFile, 'utf8')).to.equal(`${served.child.pid}\n${config}\n`);
  });

  it('keeps one pid file per instance: a second server in the same folder leaves the first one\'s alone, and reload picks by --port', async () => {
    const second = await serveChild(dir, { firstRun: false });
    try {
      const secondPort = new URL(second.url).port;
      expect(readFileSync(pidFile, 'utf8')).to.equal(`${served.child.pid}\n${config}\n`);
      expect(readFileSync(path.join(dir, 'data', `tollgate-${secondPort}.pid`), 'utf8')).to.equal(`${second.child.pid}\n${config}\n`);

      const ambiguous = reload(dir);
      expect(ambiguous.status).to.equal(1);
      expect(ambiguous.stderr).to.contain('several servers run from this directory').and.contain(secondPort);

      const chosen = reload(dir, '--port', secondPort);
      expect(chosen.status, chosen.stderr).to.equal(0);
      expect(chosen.stdout).to.contain(`(pid ${second.child.pid})`);
    } finally {
      const exited = exitCode(second.child);
      second.child.kill('SIGTERM');
      await exited;
    }
    expect(existsSync(pidFile)).to.equal(true);
  });

  it('reloads on `tollgate reload`: a model added to the file answers', async () => {
    expect(await chat(served, 'tollgate-echo-2')).to.equal(404);
    writeFileSync(config, gatewayYaml(['tollgate-echo', 'tollgate-echo-2']));

    const result = reload(dir);

    expect(result.status, result.stderr).to.equal(0);
    expect(result.stdout).to.contain(`sent SIGHUP to tollgate (pid ${served.child.pid})`);
    await waitUntil(() => (served.stdout().includes('models added: tollgate-echo-2') ? true : undefined), 5000, 'the reload log line');
    expect(await chat(served, 'tollgate-echo-2')).to.equal(200);
  });

  /** Where the invalid file below names the unknown provider, as `file:line:col`. */
  let badRoute: string;

  it('refuses to signal when the file is invalid, printing each problem with file:line:col', async () => {
    const invalid = gatewayYaml(['tollgate-echo', 'tollgate-echo-2']).replace('- provider: echo', '- provider: ech');
    const lines = invalid.split('\n');
    const line = lines.findIndex((text) => text.endsWith('- provider: ech'));
    badRoute = `${config}:${line + 1}:${lines[line].length - 'ech'.length + 1}`;
    writeFileSync(config, invalid);
    const signalsBefore = served.stdout().split('"msg":"reloading the config file"').length;

    const result = reload(dir);

    expect(result.status).to.equal(1);
    expect(result.stderr).to.contain(`${badRoute} models.tollgate-echo.routes[0].provider: unknown provider "ech" (known: echo)`);
    expect(result.stderr).to.contain('not reloaded');
    expect(result.stdout).to.equal('');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(served.stdout().split('"msg":"reloading the config file"').length, 'no SIGHUP was sent').to.equal(signalsBefore);
  });

  it('keeps serving its config when SIGHUP arrives with an invalid file, and logs the problem', async () => {
    // The file is still the invalid one of the previous test.
    served.child.kill('SIGHUP');
    await waitUntil(() => (served.stdout().includes('reload refused') ? true : undefined), 5000, 'the refusal log line');
    expect(served.stdout()).to.contain(`${badRoute} models.tollgate-echo.routes[0].provider: unknown provider`);
    expect(served.child.exitCode).to.equal(null);
    expect(await chat(served, 'tollgate-echo')).to.equal(200);
    expect(await chat(served, 'tollgate-echo-2')).to.equal(200);
  });

  it('removes the pid file on exit, after which reload says there is no server', async () => {
    served.child.kill('SIGTERM');
    expect(await exitCode(served.child)).to.equal(0);
    expect(existsSync(pidFile)).to.equal(false);

    const result = reload(dir);
    expect(result.status).to.equal(1);
    expect(result.stderr).to.contain(`no pid file in ${path.join(dir, 'data')}`);
    const byPort = reload(dir, '--port', new URL(served.url).port);
    expect(byPort.status).to.equal(1);
    expect(byPort.stderr).to.contain(`no pid file at ${pidFile}`);
  });

  it('calls a pid file naming a dead process stale, and signals nothing', () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const other = path.join(dir, 'other.pid');
    writeFileSync(other, `${dead}\n${config}\n`);

    const result = reload(dir, '--pid-file', other);

    expect(result.status).to.equal(1);
    expect(result.stderr.trim()).to.equal(
      `tollgate: stale pid file ${other}: no process ${dead} is running (the server is not running, or exited without removing it); start the server, or delete the file`,
    );
  });
});
