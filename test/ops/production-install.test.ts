/**
 * The image's runtime stage replayed on this machine (Docker cannot run here): a folder holding only
 * what the Dockerfile copies into the image, `npm ci` with the image's flags (offline, from npm's
 * cache), then the image's CMD and HEALTHCHECK, and its STOPSIGNAL to end it. This is also
 * `npm ci --omit=dev && npm start` from a clean folder: no TypeScript, `prepare` keeps the built dist/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { PACKAGE_ROOT } from '../../src/paths';
import { execForm, readDockerfile, runtimeStage, type Instruction } from '../helpers/dockerfile';

const BUILD_STAGE_ROOT = '/app/';

/** Copies what one COPY instruction of the runtime stage puts into the image. */
function replayCopy(instruction: Instruction, folder: string): void {
  const words = instruction.args.split(/\s+/);
  const fromBuild = words[0].startsWith('--from=');
  const [sources, destination] = [words.slice(fromBuild ? 1 : 0, -1), words[words.length - 1]];
  for (const source of sources) {
    // The build stage works in /app with the repository's layout, so /app/X is the checkout's X.
    const inRepo = fromBuild ? source.slice(BUILD_STAGE_ROOT.length) : source;
    const from = path.join(PACKAGE_ROOT, inRepo);
    // Docker's rules: a folder's contents go into the destination; a file goes into a destination that
    // ends in "/" under its own name, or becomes the destination.
    const intoFolder = statSync(from).isDirectory() || !destination.endsWith('/');
    cpSync(from, intoFolder ? path.join(folder, destination) : path.join(folder, destination, path.basename(inRepo)), { recursive: true });
  }
}

function imageEnv(runtime: readonly Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of runtime.filter((instruction) => instruction.keyword === 'ENV')) {
    const [name, value] = args.split('=');
    env[name] = value;
  }
  return env;
}

/** Resolves with the gateway's URL from its "listening" log line. */
function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match !== null) {
        child.stdout?.off('data', onData);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before listening:\n${output}`)));
  });
}

describe('the production install (the Docker image, replayed)', function () {
  this.timeout(240_000);
  const runtime = runtimeStage(readDockerfile());
  let folder: string;

  before(function () {
    // The image runs Node 24 and installs without optional dependencies: node:sqlite is its binding.
    // Node 20 would need better-sqlite3 compiled into the folder, which this test does not wait for.
    const [major, minor] = process.versions.node.split('.').map(Number);
    if (major < 22 || (major === 22 && minor < 13)) {
      console.log(`      (skipped: Node ${process.versions.node} has no node:sqlite; the image's install needs it)`);
      this.skip();
    }
    folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-image-'));
  });

  after(() => {
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  });

  it('installs with the image\'s npm ci, without dev dependencies or a compiler', function () {
    for (const instruction of runtime.filter((one) => one.keyword === 'COPY')) replayCopy(instruction, folder);
    const install = runtime.find((instruction) => instruction.keyword === 'RUN' && instruction.args.startsWith('npm ci'));
    expect(install, 'a RUN npm ci in the runtime stage').to.not.equal(undefined);
    const args = [...install!.args.split(/\s+/).slice(1), '--offline'];
    const npm = spawnSync('npm', args, { cwd: folder, encoding: 'utf8', env: { ...process.env, ...imageEnv(runtime) } });
    // Tests stay off the network: the packages come from npm's cache, which `npm ci` in this checkout
    // fills. A package it never downloaded (one that arrived another way) is a gap of this machine.
    if (npm.status !== 0 && /ENOTCACHED/.test(npm.stdout + npm.stderr)) {
      console.log(`      (skipped: npm's cache lacks a package (${/request to \S+\/([^/\s]+) failed/.exec(npm.stderr)?.[1] ?? '?'}); run npm ci once)`);
      this.skip();
    }
    expect(npm.status, `${npm.stdout}\n${npm.stderr}`).to.equal(0);
    expect(npm.stdout + npm.stderr).to.contain('using the dist/ already built');
    const tsc = spawnSync(process.execPath, ['-e', "require.resolve('typescript')"], { cwd: folder });
    expect(tsc.status, 'typescript must not be installed').to.not.equal(0);
  });

  it('serves with the image\'s CMD, passes its HEALTHCHECK, and exits 0 on its STOPSIGNAL', async function () {
    if (!existsSync(path.join(folder, 'node_modules', 'koa'))) this.skip(); // the install above was skipped
    const [command, ...args] = execForm(runtime.find((instruction) => instruction.keyword === 'CMD')!.args);
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLGATE_'))),
      ...imageEnv(runtime),
      TOLLGATE_HOST: '127.0.0.1', // the image listens on every interface; a test stays on loopback
      PORT: '0',
      LOG_LEVEL: 'info',
    };
    const child = spawn(command === 'node' ? process.execPath : command, args, { cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const url = await listeningUrl(child);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).to.equal(200);

      const [probeCommand, ...probeArgs] = execForm(runtime.find((instruction) => instruction.keyword === 'HEALTHCHECK')!.args);
      const health = spawnSync(probeCommand === 'node' ? process.execPath : probeCommand, probeArgs, { env: { ...env, PORT: new URL(url).port } });
      expect(health.status, String(health.stderr)).to.equal(0);

      const signal = runtime.find((instruction) => instruction.keyword === 'STOPSIGNAL')!.args as NodeJS.Signals;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill(signal);
      expect(await exited, stderr).to.equal(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
