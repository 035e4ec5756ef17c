/**
 * Which request targets reach the model endpoints. The endpoints' POSTs are served outside Koa; they
 * must match exactly what the router matched (case aside, one trailing slash, any query), and every
 * other method or near miss must get the answers it got before: a 405 naming POST, or a 404 that says
 * how to fix the base URL.
 */
import { expect } from 'chai';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

const CHAT = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] });

describe('e2e: endpoint paths', () => {
  let fake: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    gw = await startTestGateway({ upstreamUrl: fake.url });
  });

  after(async () => {
    await gw.stop();
    await fake.close();
  });

  beforeEach(() => fake.reset());

  async function send(method: string, path: string, headers: Record<string, string> = {}) {
    const res = await request(gw.url + path, {
      method,
      body: method === 'GET' || method === 'HEAD' ? undefined : CHAT,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}`, ...headers },
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text };
  }

  for (const path of ['/v1/chat/completions', '/V1/Chat/Completions', '/v1/chat/completions/', '/v1/chat/completions?beta=true', '/v1/chat/completions/?a=1']) {
    it(`serves POST ${path}`, async () => {
      fake.enqueue(chatCompletion({ text: 'served' }));
      const answer = await send('POST', path);
      expect(answer.status, answer.text).to.equal(200);
      expect(JSON.parse(answer.text).choices[0].message.content).to.equal('served');
      expect(fake.requests).to.have.length(1);
    });
  }

  it('refuses two trailing slashes as an unknown path, naming the base URL to use', async () => {
    const answer = await send('POST', '/v1/chat/completions//');
    expect(answer.status).to.equal(404);
    expect(JSON.parse(answer.text).error.message).to.include('Unknown request URL: POST /v1/chat/completions//');
    expect(fake.requests).to.have.length(0);
  });

  for (const method of ['GET', 'PUT', 'DELETE']) {
    it(`answers ${method} on an endpoint with a 405 that names POST, in the endpoint's error shape`, async () => {
      const chat = await send(method, '/v1/chat/completions');
      expect(chat.status).to.equal(405);
      expect(chat.headers.allow).to.equal('POST');
      expect(JSON.parse(chat.text).error.message).to.equal(`${method} is not supported on /v1/chat/completions; use POST.`);
      const messages = await send(method, '/v1/messages');
      expect(messages.status).to.equal(405);
      expect(JSON.parse(messages.text).type).to.equal('error');
      expect(fake.requests).to.have.length(0);
    });
  }

  it('answers HEAD and OPTIONS on an endpoint with a 405 naming POST, HEAD without a body', async () => {
    const head = await send('HEAD', '/v1/messages/count_tokens');
    expect([head.status, head.headers.allow, head.text]).to.deep.equal([405, 'POST', '']);
    expect(head.headers['x-request-id']).to.match(/^req_[0-9a-f]{32}$/);
    const options = await send('OPTIONS', '/v1/responses/');
    expect([options.status, options.headers.allow]).to.deep.equal([405, 'POST']);
    expect(JSON.parse(options.text).error.message).to.equal('OPTIONS is not supported on /v1/responses; use POST.');
    expect(fake.requests).to.have.length(0);
  });

  it("gives every answer the gateway's own request id, never the client's, success or refusal", async () => {
    fake.enqueue(chatCompletion());
    const served = await send('POST', '/v1/chat/completions', { 'x-request-id': 'client-chosen-id' });
    const refused = await send('POST', '/v1/messages', { 'x-request-id': 'client-chosen-id', authorization: 'Bearer sk-wrong' });
    for (const answer of [served, refused]) expect(answer.headers['x-request-id']).to.match(/^req_[0-9a-f]{32}$/);
    expect(served.headers['x-request-id']).to.not.equal(refused.headers['x-request-id']);
    expect(refused.status).to.equal(401);
    expect(JSON.parse(refused.text)).to.deep.include({ type: 'error', request_id: refused.headers['x-request-id'] });
    // The client's own id still travels to the provider, for its correlation.
    expect(fake.requests[0].headers['x-request-id']).to.equal('client-chosen-id');
  });
});
