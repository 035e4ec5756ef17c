/**
 * Hot reload of gateway.yaml, in process: `gateway.reload()` against a temp file. An invalid file
 * changes nothing; a valid one serves new requests while running ones (streams included) finish on
 * the old config and chain, which closes after them; restart-only fields keep their running values.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { request } from 'undici';
import { formatIssue } from '../../src/config/config-error';
import type { ReloadResult } from '../../src/gateway';
import { startFakeUpstream, waitUntil, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicStream } from '../helpers/upstream-replies';

interface LogLine {
  readonly level: number;
  readonly time: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

const CLOSING_PREVIOUS = 'reload: closing the previous plugin chain';
const CLOSING_IDLE = `${CLOSING_PREVIOUS} (requests still running under it: 0)`;

/** Adds a model routed to the fake's anthropic provider, just before `plugins:`. */
function withModel(yaml: string, id: string): string {
  return yaml.replace('\nplugins:\n', `\n  ${id}:\n    family: anthropic\n    routes:\n      - provider: anthropic\n    free: true\nplugins:\n`);
}

/** Removes a model block: its `  id:` line and the more deeply indented lines under it. */
function withoutModel(yaml: string, id: string): string {
  const lines = yaml.split('\n');
  const start = lines.indexOf(`  ${id}:`);
  let end = start + 1;
  while (lines[end].startsWith('    ')) end += 1;
  return [...lines.slice(0, start), ...lines.slice(end)].join('\n');
}

function expectOk(result: ReloadResult): Extract<ReloadResult, { ok: true }> {
  expect(result.ok, JSON.stringify(result)).to.equal(true);
  return result as Extract<ReloadResult, { ok: true }>;
}

describe('e2e: reloading gateway.yaml', function () {
  this.timeout(20000);
  let fake: FakeUpstream;
  let dir: string;
  let file: string;
  let yaml: string;
  let logs: LogLine[];
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
  });
  after(() => fake.close());

  beforeEach(async () => {
    fake.reset();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-reload-'));
    file = path.join(dir, 'gateway.yaml');
    yaml = defaultTestYaml(fake.url);
    writeFileSync(file, yaml);
    logs = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
    tg = await startTestGateway({ configFile: file, logger });
  });

  afterEach(async () => {
    await tg.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function messages(model: string, stream = false): Promise<{ status: number; text: string }> {
    const response = await request(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tg.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: 16, stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  it('keeps serving the previous config when the file is invalid, and logs every issue with file:line:col on one line', async () => {
    const broken = withModel(withModel(yaml, 'claude-broken'), 'claude-broken-too')
      .replace('claude-broken:\n    family: anthropic\n    routes:\n      - provider: anthropic', 'claude-broken:\n    family: anthropic\n    routes:\n      - provider: nowhere')
      .replace('claude-broken-too:\n    family: anthropic\n    routes:\n      - provider: anthropic', 'claude-broken-too:\n    family: anthropic\n    routes:\n      - provider: elsewhere');
    writeFileSync(file, broken);
    const lines = broken.split('\n');
    const line = lines.findIndex((text) => text.includes('provider: nowhere'));
    const lineToo = lines.findIndex((text) => text.includes('provider: elsewhere'));

    const result = await tg.gateway.reload();

    expect(result.ok).to.equal(false);
    const issues = result.ok ? [] : result.issues.map(formatIssue);
    expect(issues).to.have.length(2);
    const where = `${file}:${line + 1}:${lines[line].indexOf('nowhere') + 1}`;
    expect(issues.some((issue) => issue.startsWith(`${where} models.claude-broken.routes[0].provider: unknown provider "nowhere"`)), issues.join('\n')).to.equal(true);
    const whereToo = `${file}:${lineToo + 1}:${lines[lineToo].indexOf('elsewhere') + 1}`;
    expect(issues.some((issue) => issue.startsWith(`${whereToo} models.claude-broken-too.routes[0].provider: unknown provider "elsewhere"`)), issues.join('\n')).to.equal(true);
    const refused = logs.filter((log) => log.msg.startsWith('reload refused'));
    expect(refused).to.have.length(1);
    for (const issue of issues) expect(refused[0].msg).to.contain(issue);

    expect((await messages('claude-sonnet-5')).status).to.equal(200);
    expect((await messages('claude-broken')).status).to.equal(404);
  });

  it('appends each reload to the audit log with what it applied or where the file was wrong, and counts it by result', async () => {
    writeFileSync(file, withModel(yaml, 'claude-audited'));
    expect((await tg.gateway.reload()).ok).to.equal(true);
    writeFileSync(file, withModel(yaml, 'claude-audited').replace('- provider: anthropic', '- provider: nowhere'));
    expect((await tg.gateway.reload('test-operator')).ok).to.equal(false);

    const [refused, applied] = await tg.store.listAudit({ action: 'config.reload' });
    expect(applied).to.deep.include({ actor: 'SIGHUP', surface: 'server', target: file, accountId: null, before: null, requestId: null });
    expect(applied.after).to.deep.equal({ result: 'success', applied: ['models added: claude-audited'], needs_restart: [] });
    expect(refused).to.deep.include({ actor: 'test-operator', surface: 'server', target: file });
    expect(refused.after).to.deep.include({ result: 'refused', issues: 1 });
    expect((refused.after!.paths as string[])[0]).to.match(/^models\..+\.routes\[0\]\.provider$/);

    const scrape = await (await fetch(`${tg.url}/metrics`)).text();
    expect(scrape).to.include('tollgate_config_reloads_total{result="success"} 1');
    expect(scrape).to.include('tollgate_config_reloads_total{result="invalid"} 1');
  });

  it('serves an added model to new requests while a stream started before finishes on the old config', async () => {
    const events = anthropicStream().events;
    fake.enqueue({ ...anthropicStream(), events: [events[0], { pauseMs: 1000 }, ...events.slice(1)] });
    const response = await request(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tg.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const chunks = response.body[Symbol.asyncIterator]();
    let text = ((await chunks.next()).value as Buffer).toString('utf8');
    expect(text).to.contain('message_start');

    // The new file drops the streaming model and adds another: only new requests see either change.
    writeFileSync(file, withModel(withoutModel(yaml, 'claude-sonnet-5'), 'claude-added'));
    const result = expectOk(await tg.gateway.reload());
    expect(result.changes.applied).to.deep.equal(['models added: claude-added', 'models removed: claude-sonnet-5']);
    expect((await messages('claude-added')).status).to.equal(200);
    expect((await messages('claude-sonnet-5')).status).to.equal(404);
    expect(logs.some((log) => log.msg.startsWith(CLOSING_PREVIOUS)), 'old chain closed under a running stream').to.equal(false);

    for (let chunk = await chunks.next(); chunk.done !== true; chunk = await chunks.next()) text += (chunk.value as Buffer).toString('utf8');
    expect(response.statusCode).to.equal(200);
    expect(text).to.contain('event: message_stop');
    await waitUntil(() => (logs.some((log) => log.msg === CLOSING_IDLE) ? true : undefined), 2000, 'the old chain to close');
  });

  it('closes the previous chain at once when no request runs under it', async () => {
    writeFileSync(file, withModel(yaml, 'claude-added'));
    expectOk(await tg.gateway.reload());
    await waitUntil(() => (logs.some((log) => log.msg === CLOSING_IDLE) ? true : undefined), 1000, 'the old chain to close');
  });

  it('runs concurrent reloads one after the other', async () => {
    writeFileSync(file, withModel(yaml, 'claude-added'));
    const [first, second] = (await Promise.all([tg.gateway.reload(), tg.gateway.reload()])).map(expectOk);
    expect(first.changes.applied).to.deep.equal(['models added: claude-added']);
    // The second compares against what the first applied, not against the config both started from.
    expect(second.changes.applied).to.deep.equal([]);
    expect(logs.filter((log) => log.msg.startsWith(CLOSING_PREVIOUS))).to.have.length.at.most(1);
  });

  it('applies server limits live but keeps server.host and store.url until a restart, saying so', async () => {
    const edited = yaml
      .replace('  host: 127.0.0.1\n', '  host: 0.0.0.0\n')
      .replace(/max_body_bytes: \d+/, 'max_body_bytes: 1024')
      .replace('url: "sqlite::memory:"', `url: "sqlite:${path.join(dir, 'other.db')}"`);
    writeFileSync(file, edited);

    const result = expectOk(await tg.gateway.reload());

    expect(result.changes.needsRestart).to.deep.equal(['server.host', 'store.url']);
    expect(result.changes.applied).to.deep.equal(['server.max_body_bytes']);
    const warning = logs.find((log) => log.msg.includes('needs a restart'));
    expect(warning?.msg).to.contain('server.host, store.url').and.to.contain('running values stay in effect');
    expect(JSON.stringify(logs)).to.not.contain('other.db');
    const big = await request(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tg.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
    });
    await big.body.dump();
    expect(big.statusCode).to.equal(413);
    // Still the same listener on 127.0.0.1.
    expect((tg.gateway.server.address() as { address: string }).address).to.equal('127.0.0.1');
  });
});
