/**
 * A streamed reply whose every byte, end included, reaches the gateway in one read (a short answer
 * from a fast server, a buffering proxy, Content-Length on an SSE body) must end the client's stream
 * like one that arrives event by event. The fake writes the whole stream in one `end()` call.
 */
import { expect } from 'chai';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream, type SseReply } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicStream, chatStream, responsesStream } from '../helpers/upstream-replies';

interface Case {
  readonly name: string;
  readonly path: string;
  readonly model: string;
  readonly upstream: () => SseReply;
  /** What the client's stream ends with when it ends properly. */
  readonly last: string;
}

const CASES: readonly Case[] = [
  { name: 'native messages', path: '/v1/messages', model: 'claude-sonnet-5', upstream: () => anthropicStream(), last: 'message_stop' },
  { name: 'native chat', path: '/v1/chat/completions', model: 'gpt-test', upstream: () => chatStream({ includeUsage: true }), last: '[DONE]' },
  { name: 'native responses', path: '/v1/responses', model: 'gpt-test', upstream: () => responsesStream(), last: 'response.completed' },
  { name: 'chat translated to messages', path: '/v1/chat/completions', model: 'claude-sonnet-5', upstream: () => anthropicStream(), last: '[DONE]' },
  { name: 'responses translated to messages', path: '/v1/responses', model: 'claude-sonnet-5', upstream: () => anthropicStream(), last: 'response.completed' },
  { name: 'messages translated to chat', path: '/v1/messages', model: 'gpt-test', upstream: () => chatStream({ includeUsage: true }), last: 'message_stop' },
];

function bodyFor(path: string, model: string): Record<string, unknown> {
  if (path === '/v1/responses') return { model, input: 'Hello', stream: true };
  return { model, max_tokens: 32, messages: [{ role: 'user', content: 'Hello' }], stream: true };
}

describe('e2e: a stream whose whole reply arrives in one read', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
  });
  after(async () => {
    await tg.stop();
    await fake.close();
  });

  for (const { name, path, model, upstream, last } of CASES) {
    it(`${name}: the client's stream ends`, async () => {
      fake.enqueue({ ...upstream(), oneWrite: true });
      const response = await request(`${tg.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` },
        body: JSON.stringify(bodyFor(path, model)),
        // Before the fix the stream never ended: the client waited for its own timeout.
        signal: AbortSignal.timeout(5000),
      });
      expect(response.statusCode).to.equal(200);
      const text = await response.body.text();
      expect(text.trimEnd().split('\n').filter((line) => line !== '').slice(-2).join('\n')).to.include(last);
    });
  }
});
