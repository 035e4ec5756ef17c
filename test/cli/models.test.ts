/**
 * `tollgate models search|add|check` against the pinned catalog: an added entry carries the catalog's
 * facts and their source, leaves the rest of the file as it was (comments included), and makes a file
 * `config check` accepts; a markup is exact to the nano-unit.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseDocument } from 'yaml';
import { runCli, type CliIo } from '../../src/cli';
import { catalogModel } from '../../src/catalog/catalog';
import { parseConfig } from '../../src/config/load';
import { PACKAGE_ROOT } from '../../src/paths';

interface Run {
  readonly status: number;
  readonly out: string[];
  readonly err: string[];
}

async function tollgate(dir: string, ...args: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (line) => out.push(line), err: (line) => err.push(line), env: {}, cwd: dir };
  return { status: await runCli(args, io), out, err };
}

/** Every comment of a YAML text, in order: `#` to the end of its line, outside quoted scalars. */
function comments(text: string): string[] {
  const found: string[] = [];
  parseDocument(text); // a parse error would make the comparison meaningless
  for (const line of text.split('\n')) {
    const at = line.search(/(^|\s)#/);
    if (at >= 0 && !/["']/.test(line.slice(0, at))) found.push(line.slice(at).trim());
  }
  return found;
}

describe('tollgate models', () => {
  let dir: string;
  let file: string;
  const shipped = readFileSync(path.join(PACKAGE_ROOT, 'gateway.yaml'), 'utf8');

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-models-'));
    file = path.join(dir, 'gateway.yaml');
    copyFileSync(path.join(PACKAGE_ROOT, 'gateway.yaml'), file);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('adds a catalog model to a copy of the shipped gateway.yaml, keeping every comment and line, and config check accepts it', async () => {
    const added = await tollgate(dir, 'models', 'add', 'openai', 'gpt-5-mini', '--as', 'gpt-5-mini-resold', '--markup', '1.2', '--config', file);
    expect(added.err).to.deep.equal([]);
    expect(added.status).to.equal(0);
    const after = readFileSync(file, 'utf8');
    const before = comments(shipped);
    const now = comments(after);
    // Every comment of the file is still there, in its order; the new ones are the entry's source.
    expect(now.filter((comment) => before.includes(comment))).to.deep.equal(before);
    expect(now.filter((comment) => !before.includes(comment))).to.have.length(2);
    // And the rest of the file is byte for byte what it was: the entry went in at one place.
    let common = 0;
    while (common < shipped.length && shipped[common] === after[common]) common++;
    const inserted = after.slice(common, after.length - (shipped.length - common));
    expect(after.endsWith(shipped.slice(common))).to.equal(true);
    expect(inserted.split('\n').every((line) => line === '' || line.startsWith('  '))).to.equal(true);

    const check = await tollgate(dir, 'config', 'check', file);
    expect(check.status, check.out.join('\n')).to.equal(0);
    const config = parseConfig(after, file, {});
    const model = config.models['gpt-5-mini-resold'];
    const facts = catalogModel({ protocol: 'openai' }, 'gpt-5-mini')!;
    expect(model.family).to.equal('openai');
    expect(model.routes).to.deep.equal([{ provider: 'openai', upstream_model: 'gpt-5-mini', priority: 0, weight: 1 }]);
    expect(model.context_window).to.equal(facts.contextWindow);
    expect(model.max_output_tokens).to.equal(facts.maxOutputTokens);
    // 1.2 x the list price: 0.25 → 0.3, 0.025 → 0.03, 2 → 2.4, web search 10 → 12, exactly.
    expect(facts.price).to.deep.include({ input: 0.25, cache_hit: 0.025, output: 2 });
    expect(model.price).to.deep.include({ input: 0.3, cache_hit: 0.03, output: 2.4 });
    expect(model.price!.tool_calls).to.deep.equal({ web_search: 12 });
    expect(after).to.match(/# GPT-5 mini: openai gpt-5-mini in @pydantic\/genai-prices 0\.1\.8 \(2026-09-23\), list price of \d{4}-\d{2}-\d{2}\./);
  });

  it('sells at the list price with --price-from-catalog, long-context rates included', async () => {
    const added = await tollgate(dir, 'models', 'add', 'anthropic', 'claude-sonnet-4-5', '--price-from-catalog', '--max-output-tokens', '64000', '--config', file);
    expect(added.err).to.deep.equal([]);
    const config = parseConfig(readFileSync(file, 'utf8'), file, {});
    const price = config.models['claude-sonnet-4-5'].price!;
    expect(price).to.deep.include({ input: 3, cache_write: 3.75, cache_hit: 0.3, output: 15 });
    expect(price.long_context).to.deep.include({ above_input_tokens: 200000, input: 6, output: 22.5 });
    expect(config.models['claude-sonnet-4-5'].family).to.equal('anthropic');
  });

  it('refuses what it cannot write: an unknown provider or model, no price rule, a missing limit, a taken id', async () => {
    const cases: [string[], number, RegExp][] = [
      [['models', 'add', 'nowhere', 'gpt-5-mini', '--price-from-catalog'], 1, /has no provider "nowhere"/],
      [['models', 'add', 'openai', 'no-such-model-xyz', '--price-from-catalog'], 1, /the model catalog has no "no-such-model-xyz"/],
      [['models', 'add', 'openai', 'gpt-5-mini'], 2, /--markup M .* or --price-from-catalog/],
      [['models', 'add', 'anthropic', 'claude-sonnet-5', '--as', 'sonnet-list', '--price-from-catalog'], 2, /no output limit for "claude-sonnet-5": give --max-output-tokens N/],
      [['models', 'add', 'openai', 'gpt-5-mini', '--as', 'gpt-x', '--markup', 'lots'], 2, /--markup "lots" is not a decimal number/],
      [['models', 'add', 'openai', 'gpt-5-mini', '--price-from-catalog'], 1, /already has a model "gpt-5-mini"/],
    ];
    for (const [args, status, message] of cases) {
      const run = await tollgate(dir, ...args, '--config', file);
      expect(run.status, args.join(' ')).to.equal(status);
      expect(run.err.join('\n'), args.join(' ')).to.match(message);
    }
    expect(readFileSync(file, 'utf8')).to.equal(shipped);
  });

  it('adds to a file whose models are one flow mapping, through the document', async () => {
    writeFileSync(file, ['# mine', 'providers: { openai: { protocol: openai, base_url: "https://api.openai.com/v1", api_key: "" } } # keys later', 'models: {}', ''].join('\n'));
    const added = await tollgate(dir, 'models', 'add', 'openai', 'gpt-5-mini', '--price-from-catalog', '--config', file);
    expect(added.err).to.deep.equal([]);
    const after = readFileSync(file, 'utf8');
    expect(after).to.include('# mine').and.include('# keys later');
    expect(parseConfig(after, file, {}).models['gpt-5-mini'].price).to.deep.include({ input: 0.25, output: 2 });
  });

  it('searches the catalog by id or name', async () => {
    const run = await tollgate(dir, 'models', 'search', 'gpt-5-mini');
    expect(run.status).to.equal(0);
    expect(run.out[0]).to.match(/^PROVIDER\s+MODEL\s+CONTEXT\s+MAX OUTPUT\s+INPUT\/1M\s+OUTPUT\/1M\s+PRICED/);
    expect(run.out.some((line) => /^openai\s+gpt-5-mini\s+400000\s+128000\s+0\.25\s+2\s/.test(line))).to.equal(true);
    const none = await tollgate(dir, 'models', 'search', 'zz-no-such-model');
    expect(none.out[0]).to.match(/^no catalog model matches "zz-no-such-model"/);
  });

  it('lists the configured figures that differ from the catalog, dated', async () => {
    writeFileSync(
      file,
      [
        'providers: { openai: { protocol: openai, base_url: "https://api.openai.com/v1", api_key: "" } }',
        'models:',
        '  gpt-5-mini: { family: openai, routes: [{ provider: openai }], price: { input: 0.25, cache_hit: 0.025, output: 3 }, max_output_tokens: 128000, context_window: 400000 }',
        '',
      ].join('\n'),
    );
    const run = await tollgate(dir, 'models', 'check', '--config', file);
    expect(run.status).to.equal(0);
    expect(run.out).to.deep.equal([
      'catalog: @pydantic/genai-prices 0.1.8 (2026-09-23)',
      'gpt-5-mini (openai gpt-5-mini = catalog openai gpt-5-mini): price.output 3, catalog 2 (list price of 2026-09-23)',
    ]);
  });

  it('warns of each rate sold below what a route costs: its stated cost, or the catalog list price', async () => {
    writeFileSync(
      file,
      [
        'providers: { openai: { protocol: openai, base_url: "https://api.openai.com/v1", api_key: "" }, azure: { protocol: openai, base_url: "https://x.openai.azure.com/openai/v1", api_key: "" } }',
        'models:',
        '  gpt-5-mini:',
        '    family: openai',
        '    routes: [{ provider: openai }, { provider: azure, priority: 1, cost: { input: 0.2, output: 2.5 } }]',
        '    price: { input: 0.25, cache_hit: 0.025, output: 2.2 }',
        '    max_output_tokens: 128000',
        '    context_window: 400000',
        '',
      ].join('\n'),
    );
    const run = await tollgate(dir, 'models', 'check', '--config', file);
    expect(run.status).to.equal(0);
    expect(run.out.filter((line) => line.startsWith('warning:'))).to.deep.equal([
      // A cost's cache_hit defaults to its input rate, as a price's does.
      'warning: gpt-5-mini is sold below cost on route azure gpt-5-mini (its cost): output 2.2 < cost 2.5, cache_hit 0.025 < cost 0.2',
    ]);
    // Above the catalog's list output price of 2 on the openai route: no warning there.
  });

  it("costs an image model's output at the catalog's output rate as image output, which its price is compared with", async () => {
    const imageModel = (imageOutput: number) =>
      [
        'providers: { openai: { protocol: openai, base_url: "https://api.openai.com/v1", api_key: "" } }',
        'models:',
        '  gpt-image-1:',
        '    family: openai',
        '    kind: image',
        '    routes: [{ provider: openai }]',
        `    price: { input: 5, cache_hit: 1.25, image_input: 10, image_output: ${imageOutput} }`,
        '',
      ].join('\n');
    // The catalog lists gpt-image-1's output at 40: every token of it is an image token.
    expect(catalogModel({ protocol: 'openai' }, 'gpt-image-1')!.price).to.include({ output: 40 });
    writeFileSync(file, imageModel(30));
    const below = await tollgate(dir, 'models', 'check', '--config', file);
    expect(below.out.filter((line) => line.startsWith('warning:'))).to.deep.equal([
      'warning: gpt-image-1 is sold below cost on route openai gpt-image-1 (catalog list price): image_output 30 < cost 40',
    ]);
    expect(below.out.filter((line) => line.includes('price.'))).to.deep.equal([
      'gpt-image-1 (openai gpt-image-1 = catalog openai gpt-image-1): price.image_output 30, catalog 40 (list price of 2026-09-23)',
    ]);
    // At the list price: no warning, no difference (before, the images cost nothing and text output 40).
    writeFileSync(file, imageModel(40));
    const atList = await tollgate(dir, 'models', 'check', '--config', file);
    expect(atList.out.filter((line) => line.startsWith('warning:') || line.includes('price.'))).to.deep.equal([]);
  });
});
