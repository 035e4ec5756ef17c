/**
 * Usage analytics through real /v1 requests, on both stores: what each charge records about its client
 * (session, user agent, requested and served model, attempts, time to first byte), the summaries by
 * model, key, day and session adding up to what the ledger charged, one request in full, the sessions,
 * the keys' recent spend, and that an account never reads another's request or session.
 */
import { expect } from 'chai';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { unitsToNano, formatUnits } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicMessage, chatCompletion, chatStream } from '../helpers/upstream-replies';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, consoleYaml, PASSWORD, passwordHash } from './fixtures';

async function post(url: string, path: string, headers: Record<string, string>, body: Record<string, unknown>): Promise<{ status: number; requestId: string; text: string }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, requestId: res.headers.get('x-request-id') ?? '', text: await res.text() };
}

const chatBody = (model: string, stream = false) => ({ model, max_tokens: 100, stream, messages: [{ role: 'user', content: 'hi' }] });

const sum = (values: readonly string[]): bigint => values.reduce((total, value) => total + unitsToNano(value), 0n);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`management API: usage analytics (${backend})`, function () {
    this.timeout(30_000);
    let fake: FakeUpstream;
    let tg: TestGateway;
    let database: TestDatabase | null = null;
    let una: ApiClient;
    let other: ApiClient;
    let admin: ApiClient;
    let unaId: string;
    let otherId: string;
    let laptop: { id: string; secret: string };
    let server: { id: string; secret: string };
    let ids: { claude: string; codex: string; streamed: string; foreign: string };
    let unaCharges: ChargeRecord[];

    before(async function () {
      if (backend === 'postgres') {
        const problem = await postgresProblem();
        if (problem !== null) {
          console.log(`      skipped: ${problem}`);
          this.skip();
        }
        database = await createTestDatabase();
      }
      await passwordHash();
      fake = await startFakeUpstream();
      let yaml = consoleYaml(fake.url);
      if (database !== null) yaml = yaml.replace('store: { url: "sqlite::memory:" }', `store: { url: "${database.url}" }`);
      tg = await startTestGateway({ yaml, storeFromConfig: database !== null });
      unaId = (await addAccount(tg.store, 'una')).id;
      otherId = (await addAccount(tg.store, 'otto')).id;
      const boss = await tg.store.createAccount({ name: 'boss', role: 'admin' });
      [una, other] = await Promise.all([ApiClient.login(tg.url, 'una', PASSWORD), ApiClient.login(tg.url, 'otto', PASSWORD)]);
      const token = newManagementToken();
      await tg.store.createSession({ accountId: boss.id, hash: hashSecret(token), kind: 'token', name: null, expiresAt: null });
      admin = ApiClient.bearer(tg.url, token);
      for (const id of [unaId, otherId]) await tg.store.credit({ accountId: id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
      laptop = await una.createKey({ name: 'laptop' });
      server = await una.createKey({ name: 'server' });
      const ottos = await other.createKey({ name: 'ottos' });

      // Claude Code: its session header and user agent.
      fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 50, model: 'gpt-priced' }));
      const claude = await post(tg.url, '/v1/chat/completions', { authorization: `Bearer ${laptop.secret}`, 'x-claude-code-session-id': 'cc-session-1', 'user-agent': 'claude-cli/2.1.90 (external, cli)' }, chatBody('gpt-priced'));
      // Codex: `session_id`.
      fake.enqueue(anthropicMessage({ inputTokens: 10, outputTokens: 20, model: 'claude-priced' }));
      const codex = await post(tg.url, '/v1/messages', { 'x-api-key': server.secret, 'anthropic-version': '2023-06-01', session_id: 'codex-session-1', 'user-agent': 'codex_cli_rs/0.72.0' }, chatBody('claude-priced'));
      // Any client: x-tollgate-session, streamed.
      fake.enqueue(chatStream({ inputTokens: 30, outputTokens: 7, includeUsage: true, model: 'gpt-priced' }));
      const streamed = await post(tg.url, '/v1/chat/completions', { authorization: `Bearer ${laptop.secret}`, 'x-tollgate-session': 'cc-session-1' }, { ...chatBody('gpt-priced', true), stream_options: { include_usage: true } });
      // Another account using the same session id: still none of una's business.
      fake.enqueue(chatCompletion({ inputTokens: 5, outputTokens: 5, model: 'gpt-priced' }));
      const foreign = await post(tg.url, '/v1/chat/completions', { authorization: `Bearer ${ottos.secret}`, 'x-claude-code-session-id': 'cc-session-1' }, chatBody('gpt-priced'));
      for (const answer of [claude, codex, streamed, foreign]) expect(answer.status, answer.text).to.equal(200);
      ids = { claude: claude.requestId, codex: codex.requestId, streamed: streamed.requestId, foreign: foreign.requestId };
      unaCharges = await chargesOf(tg.store, unaId, 3);
      await chargesOf(tg.store, otherId, 1);
    });

    after(async () => {
      await tg?.stop();
      await fake?.close();
      await database?.drop();
    });

    it('records each request\'s session, user agent, served model, attempts and, for a stream, time to first byte', async () => {
      const byId = new Map(unaCharges.map((charge) => [charge.requestId, charge]));
      const claude = byId.get(ids.claude)!;
      expect(claude).to.include({ sessionId: 'cc-session-1', userAgent: 'claude-cli/2.1.90 (external, cli)', servedModel: 'gpt-priced', requestedModel: null, ttfbMs: null, origin: null });
      expect(claude.attempts).to.deep.equal([{ provider: 'openai', outcome: 'ok', ms: claude.attempts![0].ms }]);
      expect(byId.get(ids.codex)).to.include({ sessionId: 'codex-session-1', userAgent: 'codex_cli_rs/0.72.0', provider: 'anthropic' });
      const streamed = byId.get(ids.streamed)!;
      expect(streamed.sessionId).to.equal('cc-session-1');
      expect(streamed.ttfbMs).to.be.a('number').and.to.be.at.least(0).and.at.most(streamed.latencyMs + 1);
    });

    it('sums by model, key, day and session to what the ledger charged the account', async () => {
      const charged = unaCharges.reduce((total, charge) => total + charge.cost, 0n);
      const [ledger] = (await tg.store.ledgerTotals()).filter((totals) => totals.accountId === unaId);
      expect(ledger.charges).to.equal(charged);
      expect(charged > 0n, "something was charged").to.equal(true);
      for (const group of ['model', 'key', 'day', 'session'] as const) {
        const answer = await una.get(`/api/usage/summary?group_by=${group}`);
        expect(answer.status, answer.text).to.equal(200);
        const rows = answer.body.rows as Array<{ group: string; cost: string; requests: number }>;
        expect(sum(rows.map((row) => row.cost)), group).to.equal(charged);
        expect(rows.reduce((total, row) => total + row.requests, 0), group).to.equal(3);
      }
      const byKey = (await una.get('/api/usage/summary?group_by=key')).body.rows as Array<{ group: string; label: string }>;
      expect(byKey.map((row) => row.label).sort()).to.deep.equal(['laptop', 'server']);
      const byModel = (await una.get('/api/usage/summary?group_by=model')).body.rows as Array<{ group: string; input_tokens: number; cache_hit_ratio: number | null }>;
      expect(byModel.find((row) => row.group === 'gpt-priced')).to.include({ input_tokens: 130, cache_hit_ratio: 0 });
    });

    it('lets an administrator sum every account, by account and by provider', async () => {
      const everyone = (await admin.get('/api/usage/summary?group_by=account&account_id=all')).body.rows as Array<{ label: string; cost: string }>;
      const all = await tg.store.ledgerTotals();
      expect(sum(everyone.map((row) => row.cost))).to.equal(all.reduce((total, totals) => total + totals.charges, 0n));
      expect(everyone.map((row) => row.label).sort()).to.deep.equal(['otto', 'una']);
      const providers = (await admin.get('/api/usage/summary?group_by=provider&account_id=all')).body.rows as Array<{ group: string; requests: number; errors: number }>;
      expect(providers.map((row) => [row.group, row.requests, row.errors]).sort()).to.deep.equal([['anthropic', 1, 0], ['openai', 3, 0]]);
      expectError(await una.get(`/api/usage/summary?group_by=model&account_id=${otherId}`), 403, 'forbidden');
    });

    it('exports a summary as CSV with the same figures', async () => {
      const answer = await una.get('/api/usage/summary?group_by=model&format=csv');
      expect(answer.status).to.equal(200);
      expect(answer.headers.get('content-disposition')).to.match(/attachment; filename="tollgate-usage-by-model-/);
      const [header, ...lines] = answer.text.trimEnd().split('\r\n');
      expect(header.split(',').slice(0, 5)).to.deep.equal(['group', 'label', 'requests', 'errors', 'cost']);
      const json = (await una.get('/api/usage/summary?group_by=model')).body.rows as Array<{ cost: string }>;
      expect(lines.map((line) => line.split(',')[4])).to.deep.equal(json.map((row) => row.cost));
    });

    it('refuses an unknown grouping, a reversed or too long range, and a bad page', async () => {
      expectError(await una.get('/api/usage/summary?group_by=colour'), 400, 'invalid_request', 'group_by');
      expectError(await una.get('/api/usage/summary?since=2026-02-01&until=2026-01-01'), 400, 'invalid_request', 'since');
      expectError(await una.get('/api/usage/summary?since=2020-01-01&until=2026-01-01'), 400, 'invalid_request', 'since');
      expectError(await una.get('/api/usage/summary?offset=-1'), 400, 'invalid_request', 'offset');
      expectError(await una.get('/api/usage/summary?limit=5000'), 400, 'invalid_request', 'limit');
    });

    it('shows one request in full: prices per token kind, hold and charge, attempts, session', async () => {
      const answer = await una.get(`/api/usage/requests/${ids.claude}`);
      expect(answer.status, answer.text).to.equal(200);
      const request = answer.body.request;
      const charge = unaCharges.find((entry) => entry.requestId === ids.claude)!;
      expect(request).to.include({ request_id: ids.claude, session_id: 'cc-session-1', model: 'gpt-priced', served_model: 'gpt-priced', provider: 'openai', key_name: 'laptop', cost: formatUnits(charge.cost), held: formatUnits(charge.held), usage_source: 'upstream', status: 200, priced: true });
      const lines = request.lines as Array<{ kind: string; tokens: number; price_per_million: string; cost: string }>;
      expect(lines.find((line) => line.kind === 'input_tokens')).to.deep.equal({ kind: 'input_tokens', tokens: 100, price_per_million: '1', cost: '0.0001' });
      expect(lines.find((line) => line.kind === 'output_tokens')).to.deep.equal({ kind: 'output_tokens', tokens: 50, price_per_million: '5', cost: '0.00025' });
      expect(request.attempts).to.have.length(1);
      expect(request.attempts[0]).to.include({ provider: 'openai', outcome: 'ok' });
      // The administrator reads anyone's; another account gets what an unknown id gets.
      expect((await admin.get(`/api/usage/requests/${ids.foreign}`)).status).to.equal(200);
      const foreign = await una.get(`/api/usage/requests/${ids.foreign}`);
      expectError(foreign, 404, 'not_found');
      expect(foreign.body).to.deep.equal((await una.get('/api/usage/requests/req_ffffffffffffffff')).body);
    });

    it('lists the account\'s sessions newest first and opens each with its own requests only', async () => {
      const answer = await una.get('/api/usage/sessions');
      expect(answer.status, answer.text).to.equal(200);
      const sessions = answer.body.sessions as Array<{ group: string; requests: number; cost: string; models: string }>;
      expect(sessions.map((row) => row.group)).to.deep.equal(['cc-session-1', 'codex-session-1']);
      expect(sessions[0]).to.include({ requests: 2, models: 'gpt-priced' });
      const own = unaCharges.filter((charge) => charge.sessionId === 'cc-session-1');
      expect(unitsToNano(sessions[0].cost)).to.equal(own.reduce((total, charge) => total + charge.cost, 0n));
      const detail = await una.get('/api/usage/sessions/cc-session-1');
      expect(detail.status, detail.text).to.equal(200);
      expect((detail.body.requests as Array<{ request_id: string }>).map((row) => row.request_id).sort()).to.deep.equal([ids.claude, ids.streamed].sort());
      expect(detail.body.session).to.include({ group: 'cc-session-1', requests: 2 });
      // otto's only session is his: una's of the same id never shows his request, and his is not hers.
      const ottos = await other.get('/api/usage/sessions/cc-session-1');
      expect((ottos.body.requests as Array<{ request_id: string }>).map((row) => row.request_id)).to.deep.equal([ids.foreign]);
      expectError(await other.get('/api/usage/sessions/codex-session-1'), 404, 'not_found');
    });

    it('shows each key\'s last use and its spend today and this month', async () => {
      const keys = (await una.get('/api/keys')).body.keys as Array<{ name: string; last_used_at: string | null; spent_today: string; spent_month: string }>;
      const laptopCharges = unaCharges.filter((charge) => charge.keyId === laptop.id);
      const laptopKey = keys.find((key) => key.name === 'laptop')!;
      expect(unitsToNano(laptopKey.spent_today)).to.equal(laptopCharges.reduce((total, charge) => total + charge.cost, 0n));
      expect(laptopKey.spent_month).to.equal(laptopKey.spent_today);
      expect(Date.parse(laptopKey.last_used_at!)).to.equal(Math.max(...laptopCharges.map((charge) => charge.createdAt.getTime())));
    });

    // Runs last: it adds charges the tests above do not expect.
    it('every grouping adds up to what was charged, with requests outside any session and a deleted key', async () => {
      const spare = await una.createKey({ name: 'spare' });
      fake.enqueue(chatCompletion({ inputTokens: 40, outputTokens: 9, model: 'gpt-priced' }));
      const fromSpare = await post(tg.url, '/v1/chat/completions', { authorization: `Bearer ${spare.secret}` }, chatBody('gpt-priced'));
      fake.enqueue(anthropicMessage({ inputTokens: 12, outputTokens: 3, model: 'claude-priced' }));
      const fromLaptop = await post(tg.url, '/v1/messages', { 'x-api-key': laptop.secret, 'anthropic-version': '2023-06-01' }, chatBody('claude-priced'));
      for (const answer of [fromSpare, fromLaptop]) expect(answer.status, answer.text).to.equal(200);
      expect((await una.delete(`/api/keys/${spare.id}`)).status).to.be.oneOf([200, 204]);
      const charges = await chargesOf(tg.store, unaId, 5);
      const charged = charges.reduce((total, charge) => total + charge.cost, 0n);
      const sessionless = charges.filter((charge) => charge.sessionId === undefined || charge.sessionId === null);
      expect(sessionless, 'requests outside any session').to.have.length(2);
      for (const group of ['model', 'key', 'day', 'session'] as const) {
        const answer = await una.get(`/api/usage/summary?group_by=${group}`);
        expect(answer.status, answer.text).to.equal(200);
        const rows = answer.body.rows as Array<{ group: string | null; cost: string; requests: number }>;
        expect(sum(rows.map((row) => row.cost)), group).to.equal(charged);
        expect(rows.reduce((total, row) => total + row.requests, 0), group).to.equal(5);
      }
      const bySession = (await una.get('/api/usage/summary?group_by=session')).body.rows as Array<{ group: string | null; label: string | null; requests: number; cost: string; models: string | null }>;
      const none = bySession.find((row) => row.group === null);
      expect(none, 'the row of requests outside any session').to.include({ label: 'no session', requests: 2, models: 'claude-priced gpt-priced' });
      expect(unitsToNano(none!.cost)).to.equal(sessionless.reduce((total, charge) => total + charge.cost, 0n));
      const byKey = (await una.get('/api/usage/summary?group_by=key')).body.rows as Array<{ group: string; label: string; requests: number }>;
      expect(byKey.find((row) => row.group === spare.id)).to.include({ label: 'spare (deleted key)', requests: 1 });
      // A list of sessions is still of sessions only.
      const sessions = (await una.get('/api/usage/sessions')).body.sessions as Array<{ group: string | null }>;
      expect(sessions.map((row) => row.group)).to.deep.equal(['cc-session-1', 'codex-session-1']);
      const all = (await tg.store.ledgerTotals()).reduce((total, totals) => total + totals.charges, 0n);
      for (const group of ['account', 'provider', 'session', 'key'] as const) {
        const rows = (await admin.get(`/api/usage/summary?group_by=${group}&account_id=all`)).body.rows as Array<{ cost: string }>;
        expect(sum(rows.map((row) => row.cost)), `every account by ${group}`).to.equal(all);
      }
    });

    // Runs after the one above, whose charges it counts.
    it("groups the playground's turns (a session per visit) as one Playground session, the rows still adding up", async () => {
      const turns = [];
      for (const session of ['playground-aaaa', 'playground-bbbb']) {
        fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 5, model: 'gpt-priced' }));
        turns.push(await post(tg.url, '/v1/chat/completions', { authorization: `Bearer ${laptop.secret}`, 'x-tollgate-origin': 'playground', 'x-tollgate-session': session }, chatBody('gpt-priced')));
      }
      for (const answer of turns) expect(answer.status, answer.text).to.equal(200);
      const charges = await chargesOf(tg.store, unaId, 7);
      const playground = charges.filter((charge) => charge.origin === 'playground');
      expect(playground).to.have.length(2);

      const sessions = (await una.get('/api/usage/sessions')).body.sessions as Array<{ group: string | null; label: string | null; requests: number; cost: string; models: string | null }>;
      expect(sessions.map((row) => row.group)).to.deep.equal(['console playground', 'cc-session-1', 'codex-session-1']);
      expect(sessions[0]).to.include({ label: 'Playground', requests: 2, models: 'gpt-priced' });
      expect(unitsToNano(sessions[0].cost)).to.equal(playground.reduce((total, charge) => total + charge.cost, 0n));
      expect(sessions.slice(1).map((row) => row.label)).to.deep.equal([null, null]);

      // The summary by session: the playground's row beside the others, every charge in exactly one.
      const rows = (await una.get('/api/usage/summary?group_by=session')).body.rows as Array<{ group: string | null; label: string | null; requests: number; cost: string }>;
      expect(rows.filter((row) => row.label === 'Playground').map((row) => row.requests)).to.deep.equal([2]);
      expect(rows.some((row) => row.group?.startsWith('playground-'))).to.equal(false);
      expect(sum(rows.map((row) => row.cost))).to.equal(charges.reduce((total, charge) => total + charge.cost, 0n));
      expect(rows.reduce((total, row) => total + row.requests, 0)).to.equal(7);

      // The group opens with every visit's requests; one visit's session still opens on its own.
      const group = await una.get('/api/usage/sessions/console%20playground');
      expect(group.status, group.text).to.equal(200);
      expect(group.body.session).to.include({ group: 'console playground', label: 'Playground', requests: 2 });
      expect((group.body.requests as Array<{ request_id: string }>).map((row) => row.request_id).sort()).to.deep.equal(turns.map((turn) => turn.requestId).sort());
      const visit = await una.get('/api/usage/sessions/playground-aaaa');
      expect(visit.body.session).to.include({ group: 'playground-aaaa', label: null, requests: 1 });
      // Nobody else's playground: otto has none.
      expectError(await other.get('/api/usage/sessions/console%20playground'), 404, 'not_found');
    });
  });
}
