/**
 * Usage and the account's numbers after real /v1 requests through the fake upstream: the usage list
 * with costs and key names, its filters and CSV export, the zero-filled daily series, and the
 * account's balance. Prices (per 1M tokens): gpt-priced 1 in / 5 out, claude-priced 3 in / 15 out.
 */
import { expect } from 'chai';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { USAGE_FIELDS } from '../../src/admin/views';
import { unitsToNano } from '../../src/billing/money';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicMessage, chatCompletion } from '../helpers/upstream-replies';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, chat, consoleYaml, messages, PASSWORD, passwordHash, waitFor } from './fixtures';

const DAY_MS = 86_400_000;
const dayOf = (iso: string, shift = 0): string => new Date(Date.parse(iso) + shift * DAY_MS).toISOString().slice(0, 10);

/** CSV lines (CRLF-separated, the last one ended too) split into cells; no cell here holds a comma or quote. */
function csvRows(text: string): string[][] {
  expect(text.endsWith('\r\n'), 'the last line ends with CRLF').to.equal(true);
  return text.slice(0, -2).split('\r\n').map((line) => line.split(','));
}

describe('management API: usage and account', function () {
  this.timeout(20_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let una: ApiClient;
  let admin: ApiClient;
  let unaId: string;
  let otherId: string;
  let laptop: { id: string; secret: string };
  let server: { id: string; secret: string };
  let chatRequestId: string;
  let messagesRequestId: string;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    unaId = (await addAccount(tg.store, 'una')).id;
    const boss = await tg.store.createAccount({ name: 'boss', role: 'admin' });
    otherId = (await tg.store.createAccount({ name: 'other', role: 'user' })).id;
    una = await ApiClient.login(tg.url, 'una', PASSWORD);
    const token = newManagementToken();
    await tg.store.createSession({ accountId: boss.id, hash: hashSecret(token), kind: 'token', name: null, expiresAt: null });
    admin = ApiClient.bearer(tg.url, token);

    await tg.store.credit({ accountId: unaId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
    laptop = await una.createKey({ name: 'laptop' });
    server = await una.createKey({ name: 'server' });

    // 100 × 1,000 + 50 × 5,000 = 350,000 nano-units.
    fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 50, model: 'gpt-priced' }));
    const first = await chat(tg.url, laptop.secret, 'gpt-priced');
    expect(first.status, JSON.stringify(first.json)).to.equal(200);
    chatRequestId = first.headers.get('x-request-id')!;
    await chargesOf(tg.store, unaId, 1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    // 10 × 3,000 + 20 × 15,000 = 330,000 nano-units.
    fake.enqueue(anthropicMessage({ inputTokens: 10, outputTokens: 20, model: 'claude-priced' }));
    const second = await messages(tg.url, server.secret, 'claude-priced');
    expect(second.status, JSON.stringify(second.json)).to.equal(200);
    messagesRequestId = second.headers.get('x-request-id')!;
    await chargesOf(tg.store, unaId, 2);

    // Another account's usage, which una must never see.
    const foreign = await tg.createKey({ accountId: otherId, name: 'foreign' });
    expect((await chat(tg.url, foreign.key, 'gpt-free')).status).to.equal(200);
    await chargesOf(tg.store, otherId, 1);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it('lists the requests newest first with cost, usage_source and key_name', async () => {
    const answer = await una.get('/api/usage');
    expect(answer.status, answer.text).to.equal(200);
    const rows = answer.body.usage;
    expect(rows).to.have.length(2);
    expect(Object.keys(rows[0]).sort()).to.deep.equal([...USAGE_FIELDS].sort());
    expect(rows[0]).to.deep.include({
      request_id: messagesRequestId,
      account_id: unaId,
      key_id: server.id,
      key_name: 'server',
      model: 'claude-priced',
      provider: 'anthropic',
      input_tokens: 10,
      output_tokens: 20,
      cache_write_tokens: 0,
      cache_read_tokens: 0,
      cost: '0.00033',
      usage_source: 'upstream',
      status: 200,
      outcome: 'delivered',
    });
    expect(rows[1]).to.deep.include({
      request_id: chatRequestId,
      key_id: laptop.id,
      key_name: 'laptop',
      model: 'gpt-priced',
      provider: 'openai',
      input_tokens: 100,
      output_tokens: 50,
      cost: '0.00035',
      usage_source: 'upstream',
      status: 200,
      outcome: 'delivered',
    });
    expect(rows[0].endpoint).to.be.a('string').and.not.equal(rows[1].endpoint);
    expect(rows[1].latency_ms).to.be.a('number').and.at.least(0);
    expect(Date.parse(rows[0].created_at)).to.be.at.least(Date.parse(rows[1].created_at));
  });

  it('filters by key_id, model and dates', async () => {
    const byKey = (await una.get(`/api/usage?key_id=${laptop.id}`)).body.usage;
    expect(byKey.map((row: { request_id: string }) => row.request_id)).to.deep.equal([chatRequestId]);
    const byModel = (await una.get('/api/usage?model=claude-priced')).body.usage;
    expect(byModel.map((row: { request_id: string }) => row.request_id)).to.deep.equal([messagesRequestId]);
    expect((await una.get('/api/usage?model=gpt-free')).body.usage, 'another account\'s model').to.deep.equal([]);

    const all = (await una.get('/api/usage')).body.usage;
    const [newer, older] = all;
    const day = dayOf(older.created_at);
    expect((await una.get(`/api/usage?since=${day}&until=${dayOf(newer.created_at)}`)).body.usage).to.have.length(2);
    expect((await una.get(`/api/usage?since=${dayOf(newer.created_at, 1)}`)).body.usage).to.deep.equal([]);
    expect((await una.get(`/api/usage?until=${dayOf(older.created_at, -1)}`)).body.usage).to.deep.equal([]);
    // A time, not a day: since is inclusive, until exclusive.
    const sinceNewer = (await una.get(`/api/usage?since=${encodeURIComponent(newer.created_at)}`)).body.usage;
    expect(sinceNewer.map((row: { request_id: string }) => row.request_id)).to.deep.equal([messagesRequestId]);
    const untilNewer = (await una.get(`/api/usage?until=${encodeURIComponent(newer.created_at)}`)).body.usage;
    expect(untilNewer.map((row: { request_id: string }) => row.request_id)).to.deep.equal([chatRequestId]);

    const limited = (await una.get('/api/usage?limit=1')).body.usage;
    expect(limited.map((row: { request_id: string }) => row.request_id)).to.deep.equal([messagesRequestId]);
  });

  it('refuses bad query parameters with 400 naming them', async () => {
    expectError(await una.get('/api/usage?since=yesterday'), 400, 'invalid_request', 'since');
    expectError(await una.get('/api/usage?until=2026-13-45'), 400, 'invalid_request', 'until');
    expectError(await una.get('/api/usage?limit=0'), 400, 'invalid_request', 'limit');
    expectError(await una.get('/api/usage?limit=1001'), 400, 'invalid_request', 'limit');
    expectError(await una.get(`/api/usage?key_id=${laptop.id}&key_id=${server.id}`), 400, 'invalid_request', 'key_id');
  });

  it('exports CSV: a header line, then one line per row with the same values', async () => {
    const answer = await una.get('/api/usage?format=csv');
    expect(answer.status).to.equal(200);
    expect(answer.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect(answer.headers.get('content-disposition')).to.match(/^attachment; filename="tollgate-usage-\d{4}-\d{2}-\d{2}\.csv"$/);
    expect(answer.headers.get('cache-control')).to.equal('no-store');
    const [header, ...lines] = csvRows(answer.text);
    expect(header).to.deep.equal([...USAGE_FIELDS]);
    expect(lines).to.have.length(2);
    const json = (await una.get('/api/usage')).body.usage;
    lines.forEach((cells, index) => {
      const expected = USAGE_FIELDS.map((field) => (json[index][field] === null ? '' : String(json[index][field])));
      expect(cells).to.deep.equal(expected);
    });

    const filtered = csvRows((await una.get(`/api/usage?format=csv&key_id=${server.id}`)).text);
    expect(filtered).to.have.length(2);
    expect(filtered[1][USAGE_FIELDS.indexOf('request_id')]).to.equal(messagesRequestId);
  });

  it('GET /api/usage/daily returns exactly `days` days, oldest first, ending today, zero-filled', async () => {
    const answer = await una.get('/api/usage/daily?days=7');
    expect(answer.status).to.equal(200);
    const days = answer.body.days;
    expect(days).to.have.length(7);
    const today = new Date().toISOString().slice(0, 10);
    expect(days[6]).to.deep.equal({ day: today, requests: 2, cost: '0.00068' });
    for (let i = 0; i < 6; i += 1) {
      expect(days[i]).to.deep.equal({ day: dayOf(`${today}T00:00:00Z`, i - 6), requests: 0, cost: '0' });
    }
    expect((await una.get('/api/usage/daily')).body.days, 'two weeks by default').to.have.length(14);
    expect((await una.get('/api/usage/daily?days=1')).body.days).to.deep.equal([{ day: today, requests: 2, cost: '0.00068' }]);
    for (const bad of ['0', '367', 'abc', '1.5', '-3']) {
      expectError(await una.get(`/api/usage/daily?days=${bad}`), 400, 'invalid_request', 'days');
    }
  });

  it('GET /api/account shows balance, held, available and today', async () => {
    const answer = await waitFor(() => una.get('/api/account'), (got) => got.body?.held === '0', 'no funds held');
    expect(answer.status).to.equal(200);
    expect(answer.body).to.deep.equal({
      account: (await una.get('/api/session')).body.account,
      balance: '9.99932',
      held: '0',
      available: '9.99932',
      today: { requests: 2, cost: '0.00068' },
    });
    expect((await tg.store.balance(unaId)).balance).to.equal(unitsToNano('9.99932'));
    // The keys' spend follows the charges.
    const keys = (await una.get('/api/keys')).body.keys;
    expect(keys.find((key: { id: string }) => key.id === laptop.id).spent).to.equal('0.00035');
    expect(keys.find((key: { id: string }) => key.id === server.id).spent).to.equal('0.00033');
  });

  it('a user sees only their own usage: another account\'s key_id gives nothing, its account_id 403', async () => {
    const foreignKeyId = (await tg.store.listKeys({ accountId: otherId }))[0].id;
    expect((await una.get(`/api/usage?key_id=${foreignKeyId}`)).body.usage).to.deep.equal([]);
    expect(csvRows((await una.get(`/api/usage?format=csv&key_id=${foreignKeyId}`)).text)).to.have.length(1);
    expectError(await una.get(`/api/usage?account_id=${otherId}`), 403, 'forbidden');
    expectError(await una.get('/api/usage?account_id=all'), 403, 'forbidden');
    expectError(await una.get(`/api/usage?format=csv&account_id=${otherId}`), 403, 'forbidden');
    expect((await una.get(`/api/usage?account_id=${unaId}`)).body.usage, 'naming oneself is fine').to.have.length(2);
  });

  it('an administrator may read any account\'s usage, or all of it', async () => {
    expect((await admin.get('/api/usage')).body.usage, 'the admin\'s own: none').to.deep.equal([]);
    const unas = (await admin.get(`/api/usage?account_id=${unaId}`)).body.usage;
    expect(unas.map((row: { request_id: string }) => row.request_id)).to.deep.equal([messagesRequestId, chatRequestId]);
    expect(unas[0].key_name).to.equal('server');
    const everyone = (await admin.get('/api/usage?account_id=all')).body.usage;
    expect(everyone).to.have.length(3);
    expect(new Set(everyone.map((row: { account_id: string }) => row.account_id))).to.deep.equal(new Set([unaId, otherId]));
    expect(everyone.find((row: { account_id: string }) => row.account_id === otherId).key_name).to.equal('foreign');
  });
});
