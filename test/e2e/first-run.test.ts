import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { PACKAGE_ROOT } from '../../src/paths';
import { SERVE_START_BOUND_MS } from '../helpers/serve-child';

const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  /** The key from the first-run banner, or null when none was printed. */
  readonly key: string | null;
  readonly stdout: () => string;
}

/** Starts `tollgate serve` in `dir` and resolves once it logs that it listens. */
function serve(dir: string, env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      // A child left running would outlive the suite and load every test after it.
      child.kill('SIGKILL');
      reject(new Error(`no listening line; stdout so far:\n${out}`));
    }, SERVE_START_BOUND_MS);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}:\n${out}`)));
    const check = () => {
      const listening = /"url":"(http:\/\/[^"]+)".*"msg":"tollgate is listening"/.exec(out);
      if (listening === null) return;
      // The banner, when there is one, follows the listening line; give it a moment to arrive.
      setTimeout(() => {
        clearTimeout(timer);
        child.stdout.off('data', check);
        const key = /^\s+(sk-[A-Za-z0-9]{48})$/m.exec(out)?.[1] ?? null;
        resolve({ child, url: listening[1], key, stdout: () => out });
      }, 300);
    };
    child.stdout.on('data', check);
  });
}

/** The first JSON log line `matches` accepts, once it has been written. */
async function waitForLine(served: Served, matches: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  for (let waited = 0; waited < 5000; waited += 50) {
    for (const text of served.stdout().split('\n')) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as Record<string, unknown>;
      if (matches(line)) return line;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no such log line in:\n${served.stdout()}`);
}

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('e2e: first run of `tollgate serve` on the default gateway.yaml', function () {
  this.timeout(60_000);
  let dir: string;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-first-run-'));
    copyFileSync(path.join(PACKAGE_ROOT, 'gateway.yaml'), path.join(dir, 'gateway.yaml'));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints an admin key once, serves the echo model to both SDKs with it, and exits 0 on SIGTERM', async () => {
    const first = await serve(dir);
    try {
      expect(first.key, first.stdout()).to.be.a('string');
      // Each provider without a key is reported once at start, by name.
      const unconfigured = first.stdout().match(/provider \\"(\w+)\\" has no api_key/g) ?? [];
      expect(unconfigured).to.have.length(2);
      expect(first.stdout()).to.contain('provider \\"anthropic\\" has no api_key');
      expect(first.stdout()).to.contain('provider \\"openai\\" has no api_key');
      const openai = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: first.key!, maxRetries: 0 });
      const chat = await openai.chat.completions.create({
        model: 'tollgate-echo',
        messages: [{ role: 'user', content: 'Hello there' }],
      });
      expect(chat.choices[0].message.content).to.equal('Echo: Hello there');

      const anthropic = new Anthropic({ baseURL: first.url, apiKey: first.key!, maxRetries: 0 });
      const message = await anthropic.messages.create({
        model: 'tollgate-echo',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Hello there' }],
      });
      expect(message.content).to.deep.equal([{ type: 'text', text: 'Echo: Hello there' }]);

      // A model whose provider key is unset answers 503 with a message saying so.
      const refused = await openai.chat.completions
        .create({ model: 'gpt-5-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((err: unknown) => err);
      expect(refused).to.be.instanceOf(OpenAI.APIError);
      expect((refused as InstanceType<typeof OpenAI.APIError>).status).to.equal(503);
      expect((refused as Error).message).to.contain('no API key configured');
      // A known setting, not a fault: no error line, no stack; the request's own line names the model.
      const requestLine = await waitForLine(first, (line) => line.msg === 'request' && line.model === 'gpt-5-mini');
      expect(requestLine).to.include({ level: 'info', status: 503, errorCode: 'TOLLGATE_ERR_PROVIDER_UNCONFIGURED' });
      expect(first.stdout()).to.not.contain('"level":"error"').and.not.match(/\n\s+at /);
      // The default listens on this machine only, and says so.
      const listening = await waitForLine(first, (line) => line.msg === 'tollgate is listening');
      expect(listening.listen).to.match(/^127\.0\.0\.1:\d+ \(this machine only/);
      expect(first.stdout()).to.match(/Listening on 127\.0\.0\.1:\d+ \(this machine only/);
    } finally {
      first.child.kill('SIGTERM');
    }
    expect(await exitCode(first.child)).to.equal(0);

    const second = await serve(dir);
    second.child.kill('SIGTERM');
    expect(await exitCode(second.child)).to.equal(0);
    expect(second.key, 'the banner is printed on the first start only').to.equal(null);
  });

  it('refuses a broken gateway.yaml with one line per problem and no stack trace', async () => {
    const broken = path.join(dir, 'broken.yaml');
    writeFileSync(broken, 'providers:\n  echo: { protocol: echo }\nmodels:\n  m: { family: openai, routes: [{ provider: ech }], free: true }\n');
    const child = spawn(process.execPath, [CLI, 'serve', '--config', broken], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await exitCode(child);

    expect(code).to.not.equal(0);
    expect(stderr.trim()).to.equal(`${broken}:4:45 models.m.routes[0].provider: unknown provider "ech" (known: echo)`);
  });
});
