import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runConfigCheck } from '../../src/cli/config-check';
import { PACKAGE_ROOT } from '../../src/paths';

/** Runs the check and returns its exit code with the lines it printed. */
function check(file: string): { code: number; lines: string[] } {
  const lines: string[] = [];
  const code = runConfigCheck(file, (line) => lines.push(line));
  return { code, lines };
}

describe('cli/config-check runConfigCheck', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-config-check-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a one-line summary and returns 0 for the default gateway.yaml', () => {
    const file = path.join(PACKAGE_ROOT, 'gateway.yaml');
    expect(check(file)).to.deep.equal({ code: 0, lines: [`${file}: OK (3 providers, 10 models, plugins: auth, billing, metrics, rate-limit, translate, upstream)`] });
  });

  it('lists only enabled plugins and counts in the singular', () => {
    const file = path.join(dir, 'one.yaml');
    writeFileSync(file, 'providers:\n  echo: { protocol: echo }\nmodels:\n  m: { family: openai, routes: [{ provider: echo }], free: true }\nplugins:\n  auth: { enabled: false }\n');
    expect(check(file)).to.deep.equal({ code: 0, lines: [`${file}: OK (1 provider, 1 model, plugins: billing, metrics, rate-limit, translate, upstream)`] });
  });

  it('prints every issue, one per line, and returns 1', () => {
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'server:\n  port: 80a\n  hots: x\nproviders: {}\nmodels: {}\n');
    expect(check(file)).to.deep.equal({
      code: 1,
      lines: [`${file}:2:9 server.port: expected integer, got string "80a"`, `${file}:3:3 server.hots: unknown field "hots" (did you mean "host"?)`],
    });
  });

  it('reports schema and cross-field problems together, each with file:line:column', () => {
    const file = path.join(dir, 'both.yaml');
    writeFileSync(
      file,
      [
        'providers:',
        '  anthropic: { protocol: anthropic, base_url: "https://api.anthropic.com" }',
        '  openai: { protocl: openai, base_url: "https://api.openai.com/v1" }',
        'models:',
        '  claude-sonnet-5:',
        '    family: anthropic',
        '    routes: [{ provider: anthropc }]',
        '    free: true',
        '  gpt-5-mini:',
        '    family: openai',
        '    routes: [{ provider: openai }]',
        '',
      ].join('\n'),
    );
    const { code, lines } = check(file);
    expect(code).to.equal(1);
    expect(lines).to.include(`${file}:7:26 models.claude-sonnet-5.routes[0].provider: unknown provider "anthropc" (known: anthropic, openai)`);
    expect(lines.some((line) => line.startsWith(`${file}:3:`) && line.includes('providers.openai.protocl: unknown field "protocl"'))).to.equal(true, lines.join('\n'));
    // The model routed to the provider with a schema error is not also called unknown, and its missing
    // price is still found.
    expect(lines.some((line) => line.includes('unknown provider "openai"'))).to.equal(false);
    expect(lines.some((line) => line.startsWith(`${file}:10:`) && line.includes('needs a price'))).to.equal(true, lines.join('\n'));
  });

  it('prints one line without a stack trace for a missing file', () => {
    const file = path.join(dir, 'missing.yaml');
    expect(check(file)).to.deep.equal({ code: 1, lines: [`cannot read ${file}: no such file`] });
  });

  it('prints one line for a folder given as the file', () => {
    expect(check(dir)).to.deep.equal({ code: 1, lines: [`cannot read ${dir}: is a directory`] });
  });
});
