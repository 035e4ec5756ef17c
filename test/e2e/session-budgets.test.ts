/**
 * Session budgets end to end, on the embedded store and on PostgreSQL + Redis: a session over its key's
 * `session_budget` gets 402 session_budget_exceeded on its next request in each endpoint's shape (chat,
 * responses, messages), naming the session and what it spent; another session of the same key is still
 * served; a request without a session id is not capped by it; twenty concurrent streams of one session
 * against a budget for three holds admit exactly three.
 *
 * Prices per 1M tokens: input 1, output 5 (1,000 and 5,000 nano-units per token). A hold is one input
 * token per body byte plus max_tokens of output.
 */
import { expect } from 'chai';
import { formatUnits } from '../../src/billing/money';
import { onEachBackend, type Backend } from '../helpers/backends';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion, chatStream } from '../helpers/upstream-replies';

const INPUT_NANO = 1000n;
const OUTPUT_NANO = 5000n;
/** What each answer costs: 20 input tokens and 50 output tokens. */
const ANSWER_COST = 20n * INPUT_NANO + 50n * OUTPUT_NANO;

function yamlFor(upstreamUrl: string, backend: Backend): string {
  return `
version: 1
server: { host: 127.0.0.1 }
${backend.sections}
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  claude-priced: { family: anthropic, routes: [{ provider: anthropic }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 1 } }
`;
}

function chatBody(stream = false, content = 'Count to three.'): string {
  return JSON.stringify({ model: 'gpt-priced', max_tokens: 50, stream, messages: [{ role: 'user', content }] });
}

/** What billing holds for `body` with 50 output tokens. */
function holdOf(body: string): bigint {
  return BigInt(Buffer.byteLength(body)) * INPUT_NANO + 50n * OUTPUT_NANO;
}

onEachBackend((backend) => `e2e: session budgets on ${backend}`, 'session budgets', sessionBudgets);

function sessionBudgets(backendOf: () => Backend): void {
  let fake: FakeUpstream;
  let tg: TestGateway;

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url, backendOf()), storeFromConfig: true });
    await tg.store.credit({ accountId: tg.accountId, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: 'start' });
  });

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  async function ledgerHas(count: number): Promise<void> {
    for (let waited = 0; (await tg.store.listCharges({ limit: 100 })).length < count; waited += 10) {
      if (waited > 5000) throw new Error(`the ledger did not reach ${count} charges`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  function chat(session: Record<string, string>, body = chatBody()): Promise<Response> {
    return fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${tg.key}`, 'content-type': 'application/json', ...session }, body });
  }

  it('refuses a session past its budget on its next request, in each endpoint shape, and serves another session and no session', async () => {
    const body = chatBody();
    // One answer fits; after it, the next hold does not: the session has spent one answer.
    const budget = ANSWER_COST + holdOf(body) - 1n;
    expect(ANSWER_COST < budget && holdOf(body) < budget).to.equal(true);
    await tg.store.setKeyLimits(tg.keyId, { sessionBudget: budget });
    const session = { 'x-claude-code-session-id': `cc-${Date.now()}` };

    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
    const first = await chat(session);
    expect(first.status, await first.text()).to.equal(200);
    const served = fake.requests.length;
    // In the ledger before the next request, so each book reports the same spend (the store's rows count
    // a charge on its way as its hold until then).
    await ledgerHas(1);

    const refused = await chat(session);
    expect(refused.status).to.equal(402);
    expect(refused.headers.get('x-should-retry')).to.equal('false');
    expect(refused.headers.get('x-tollgate-session-spent')).to.equal(formatUnits(ANSWER_COST));
    const { error } = (await refused.json()) as { error: { type: string; code: string; message: string } };
    expect(error.type).to.equal('insufficient_quota');
    expect(error.code).to.equal('session_budget_exceeded');
    expect(error.message).to.include(`session "${session['x-claude-code-session-id']}"`).and.include(`spent ${formatUnits(ANSWER_COST)}`).and.include("This API key's session budget of");

    // Asking for more output (500 tokens) than the session has left: refused on every endpoint.
    const responses = await fetch(`${tg.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tg.key}`, 'content-type': 'application/json', ...session },
      body: JSON.stringify({ model: 'gpt-priced', max_output_tokens: 500, input: 'Count to three.' }),
    });
    expect(responses.status).to.equal(402);
    const responsesError = ((await responses.json()) as { error: { type: string; code: string } }).error;
    expect(responsesError).to.deep.include({ type: 'insufficient_quota', code: 'session_budget_exceeded' });

    const messages = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...session },
      body: JSON.stringify({ model: 'claude-priced', max_tokens: 500, messages: [{ role: 'user', content: 'Count to three.' }] }),
    });
    expect(messages.status).to.equal(402);
    const anthropic = (await messages.json()) as { type: string; error: { type: string; message: string } };
    expect(anthropic.type).to.equal('error');
    expect(anthropic.error.type).to.equal('billing_error');
    expect(anthropic.error.message).to.include('session budget').and.include(session['x-claude-code-session-id']);
    expect(fake.requests.length, 'nothing refused reached the upstream').to.equal(served);

    // Another session of the same key, by each header that names one, is served.
    for (const other of [{ 'x-tollgate-session': 'another-session' }, { session_id: 'codex-session' }] as Record<string, string>[]) {
      fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
      const answer = await chat(other);
      expect(answer.status, await answer.text()).to.equal(200);
    }
    // Without a session id, nothing caps the requests per session: three answers, well past the budget.
    for (let i = 0; i < 3; i++) {
      fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
      const answer = await chat({});
      expect(answer.status, await answer.text()).to.equal(200);
    }
  });

  it("caps an account's sessions across its keys, and a cleared budget no longer refuses", async () => {
    const body = chatBody();
    const budget = ANSWER_COST + holdOf(body) - 1n;
    await tg.store.setAccountSessionBudget(tg.accountId, budget);
    const second = await tg.createKey();
    const session = { 'x-tollgate-session': `acct-${Date.now()}` };
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
    expect((await chat(session)).status).to.equal(200);
    const refused = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${second.key}`, 'content-type': 'application/json', ...session },
      body,
    });
    expect(refused.status).to.equal(402);
    expect(((await refused.json()) as { error: { message: string } }).error.message).to.include("This account's session budget of");
    await tg.store.setAccountSessionBudget(tg.accountId, null);
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
    // The key cache sees the change by the store's revision; the next request or so is served.
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
      const answer = await chat(session);
      status = answer.status;
      await answer.arrayBuffer();
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).to.equal(200);
  });

  it('admits exactly 3 of 20 concurrent streams of one session against a budget for 3 holds', async () => {
    const body = chatBody(true);
    const hold = holdOf(body);
    await tg.store.setKeyLimits(tg.keyId, { sessionBudget: 3n * hold + hold / 2n });
    const session = { 'x-claude-code-session-id': `burst-${Date.now()}` };
    // The admitted streams stay open until the 17 refusals are back, so no settlement frees budget early.
    let refusedCount = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }) });
    const before = fake.requests.length;
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () =>
        chat(session, body).then(async (res) => {
          await res.arrayBuffer();
          if (res.status !== 200 && ++refusedCount === 17) allRefused();
          return res.status;
        }),
      ),
    );
    expect(statuses.filter((status) => status === 200), 'admitted').to.have.length(3);
    expect(statuses.filter((status) => status === 402), 'refused').to.have.length(17);
    expect(fake.requests.length - before).to.equal(3);
    // Another session of the key is not held up by this one's holds.
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
    expect((await chat({ 'x-claude-code-session-id': `other-${Date.now()}` })).status).to.equal(200);
  });
}
