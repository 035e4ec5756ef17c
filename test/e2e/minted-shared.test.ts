/**
 * `previous_response_id` on a Claude model behind two instances sharing one Redis: a follow-up that
 * lands on the other instance still continues its conversation (plain and streamed), while another
 * account's id and a made-up one get OpenAI's 400 `previous_response_not_found`. Skipped, saying so,
 * without PostgreSQL and Redis.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { anthropicMessage, anthropicStream } from '../helpers/upstream-replies';

function sharedYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { url: "${REDIS_URL}", key_prefix: "${redisPrefix}" }
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
models:
  claude-sonnet-5: { family: anthropic, routes: [{ provider: anthropic }], free: true }
`;
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly text: string;
}

async function respond(gateway: Gateway, key: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${gateway.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-5', ...body }),
  });
  const text = await res.text();
  return { status: res.status, text, body: body.stream === true && res.status === 200 ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** The id of the response a stream completed with. */
function streamedId(text: string): string {
  const completed = text.split('\n').find((line) => line.startsWith('data: ') && line.includes('"response.completed"'));
  expect(completed, 'a response.completed event').to.not.equal(undefined);
  return (JSON.parse(completed!.slice(6)) as { response: { id: string } }).response.id;
}

describe('e2e: minted responses shared by two instances', function () {
  this.timeout(30_000);
  let shared: SharedInstances | null = null;
  let fake: FakeUpstream;
  let gateways: readonly Gateway[] = [];
  let store: Store;
  let alice: string;
  let bob: string;

  before(async function () {
    const started = await startSharedInstances('minted', sharedYaml);
    if ('problem' in started) {
      console.log(`      ${started.problem}: minted-responses suite skipped`);
      this.skip();
    }
    shared = started;
    ({ fake, store, gateways } = shared);
    for (const name of ['alice', 'bob']) {
      const account = await store.createAccount({ name, role: 'user' });
      const { key } = await issueApiKey(store, { accountId: account.id, name: null });
      if (name === 'alice') alice = key;
      else bob = key;
    }
  });

  after(async () => shared?.close());

  it('continues on the second instance a conversation the first one answered', async () => {
    fake.reset();
    fake.enqueue(anthropicMessage({ text: 'Your name is Ada.' }), anthropicMessage({ text: 'You told me: Ada.' }));
    const first = await respond(gateways[0], alice, { input: 'My name is Ada.' });
    expect(first.status, first.text).to.equal(200);
    const second = await respond(gateways[1], alice, { previous_response_id: first.body.id, input: 'What is my name?' });
    expect(second.status, second.text).to.equal(200);
    const sent = fake.requests[1].json() as { messages: { role: string; content: unknown }[] };
    expect(sent.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'user']);
    expect(JSON.stringify(sent.messages[1].content)).to.include('Your name is Ada.');
  });

  it('continues a streamed response, and refers to its items, on the other instance', async () => {
    fake.reset();
    fake.enqueue(anthropicStream({ text: 'Streamed hello.' }), anthropicMessage({ text: 'Again.' }), anthropicMessage({ text: 'Item.' }));
    const first = await respond(gateways[1], alice, { input: 'Say hello.', stream: true });
    expect(first.status, first.text).to.equal(200);
    const id = streamedId(first.text);
    const second = await respond(gateways[0], alice, { previous_response_id: id, input: 'Again?' });
    expect(second.status, second.text).to.equal(200);
    const output = second.body.output as { id: string }[];
    const third = await respond(gateways[1], alice, { input: [{ type: 'item_reference', id: output[0].id }, { role: 'user', content: 'Once more.' }] });
    expect(third.status, third.text).to.equal(200);
    expect(JSON.stringify((fake.requests[1].json() as { messages: unknown }).messages)).to.include('Streamed hello.');
    expect(JSON.stringify((fake.requests[2].json() as { messages: unknown }).messages)).to.include('Again.');
  });

  it("answers 400 previous_response_not_found for another account's id and a made-up one", async () => {
    fake.reset();
    fake.enqueue(anthropicMessage({ text: 'Private.' }));
    const mine = await respond(gateways[0], alice, { input: 'A secret.' });
    expect(mine.status, mine.text).to.equal(200);
    for (const [key, id] of [[bob, mine.body.id as string], [alice, 'resp_madeup0000']]) {
      for (const gateway of gateways) {
        const refused = await respond(gateway, key, { previous_response_id: id, input: 'Go on.' });
        expect(refused.status, refused.text).to.equal(400);
        expect(refused.body.error).to.deep.include({
          type: 'invalid_request_error',
          code: 'previous_response_not_found',
          param: 'previous_response_id',
          message: `Previous response with id '${id}' not found.`,
        });
      }
    }
    expect(fake.requests, 'no refused request went upstream').to.have.length(1);
  });
});
