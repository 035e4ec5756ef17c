/**
 * The request boundary both listeners share, on its own: the ids a request is known by, the client's
 * address under the proxy settings, one rendering of every error in the shape asked for, and the 405.
 * That the two listeners really go through it is in test/e2e (endpoint-paths, errors, hardening).
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { answerError, clientAddress, methodNotAllowed, openRequest, type ProxySettings } from '../../src/http/boundary';
import { GatewayError } from '../../src/kernel/errors';
import { ENDPOINTS } from '../../src/protocols/types';
import { captureLogger } from '../helpers/capture-logger';

function requestWith(headers: Record<string, string | string[]>, peer = '192.0.2.1'): IncomingMessage {
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: peer });
  const req = new IncomingMessage(socket);
  req.headers = headers;
  return req;
}

/** What `answerError` is given, as both listeners' contexts offer it. */
function answering(headersSent = false, writable = true) {
  const headers: Record<string, string> = {};
  const ctx = {
    res: { headersSent } as ServerResponse,
    writable,
    status: 404,
    body: undefined as unknown,
    set(fields: Readonly<Record<string, string>>) {
      Object.assign(headers, fields);
    },
  };
  return { ctx, headers };
}

describe('http/boundary', () => {
  describe('openRequest', () => {
    it("gives every request our own id, on the response too, and keeps the client's well-formed one beside it", () => {
      const req = requestWith({ 'x-request-id': 'client-7:a.b_c' });
      const res = new ServerResponse(req);
      const ids = openRequest(req, res);
      expect(ids.requestId).to.match(/^req_[0-9a-f]{32}$/);
      expect(res.getHeader('x-request-id')).to.equal(ids.requestId);
      expect(ids.clientRequestId).to.equal('client-7:a.b_c');
      expect(openRequest(req, new ServerResponse(req)).requestId).to.not.equal(ids.requestId);
    });

    it("drops a client id that is ill-formed, too long, or sent twice", () => {
      for (const offered of ['has space', 'line\nbreak', 'x'.repeat(129), '', ['a', 'b']]) {
        const req = requestWith({ 'x-request-id': offered });
        expect(openRequest(req, new ServerResponse(req)).clientRequestId, String(offered)).to.equal(null);
      }
      const bare = requestWith({});
      expect(openRequest(bare, new ServerResponse(bare)).clientRequestId).to.equal(null);
    });
  });

  describe('clientAddress', () => {
    const direct: ProxySettings = { trust_proxy: false, trusted_proxy_hops: 1 };
    const oneHop: ProxySettings = { trust_proxy: true, trusted_proxy_hops: 1 };
    const twoHops: ProxySettings = { trust_proxy: true, trusted_proxy_hops: 2 };
    const allHops: ProxySettings = { trust_proxy: true, trusted_proxy_hops: 0 };
    const forwarded = requestWith({ 'x-forwarded-for': '10.0.0.9, 198.51.100.4 ,203.0.113.1' });

    it("is the socket's peer unless the proxy is trusted, whatever X-Forwarded-For says", () => {
      expect(clientAddress(forwarded, direct)).to.equal('192.0.2.1');
    });

    it('is the entry the outermost trusted proxy appended, counted from the right', () => {
      expect(clientAddress(forwarded, oneHop)).to.equal('203.0.113.1');
      expect(clientAddress(forwarded, twoHops)).to.equal('198.51.100.4');
      // No hop count: every entry is trusted, the leftmost is the client.
      expect(clientAddress(forwarded, allHops)).to.equal('10.0.0.9');
    });

    it("falls back on the peer when the trusted proxy sent no address, and skips empty entries", () => {
      expect(clientAddress(requestWith({}), oneHop)).to.equal('192.0.2.1');
      expect(clientAddress(requestWith({ 'x-forwarded-for': '' }), oneHop)).to.equal('192.0.2.1');
      expect(clientAddress(requestWith({ 'x-forwarded-for': '203.0.113.5, ,' }), oneHop)).to.equal('203.0.113.5');
    });
  });

  describe('answerError', () => {
    const silent = captureLogger('silent', []);

    it('renders an error in the OpenAI shape, with its headers', () => {
      const { ctx, headers } = answering();
      const error = new GatewayError('TOLLGATE_ERR_MODEL_NOT_ALLOWED', "This API key may not use the model 'x'.", { param: 'model' });
      expect(answerError(ctx, error, 'openai', 'req_1', silent)).to.equal(error);
      expect(ctx.status).to.equal(403);
      expect(ctx.body).to.deep.equal({ error: { message: "This API key may not use the model 'x'.", type: 'permission_error', param: 'model', code: 'model_not_allowed' } });
      expect(headers).to.deep.equal({ 'x-should-retry': 'false' });
    });

    it('renders an error in the Anthropic shape, with the request id in the body', () => {
      const { ctx, headers } = answering();
      const error = new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable.', { headers: { 'retry-after': '1' } });
      answerError(ctx, error, 'anthropic', 'req_2', silent);
      expect(ctx.status).to.equal(503);
      expect(ctx.body).to.deep.equal({ type: 'error', error: { type: error.spec.anthropicType ?? 'api_error', message: 'Billing is unavailable.' }, request_id: 'req_2' });
      expect(headers).to.include({ 'retry-after': '1' });
    });

    it("hides what was not thrown for the client, and logs it as the gateway's fault", () => {
      const lines: string[] = [];
      const { ctx } = answering();
      const error = answerError(ctx, new Error('secret detail'), 'openai', 'req_3', captureLogger('error', lines));
      expect(error.code).to.equal('TOLLGATE_ERR_INTERNAL');
      expect(JSON.stringify(ctx.body)).to.not.include('secret detail');
      expect(lines).to.have.length(1);
      expect(JSON.parse(lines[0])).to.deep.include({ requestId: 'req_3' });
    });

    it("logs neither a client's error nor a provider left without a key", () => {
      const lines: string[] = [];
      const logger = captureLogger('error', lines);
      answerError(answering().ctx, new GatewayError('TOLLGATE_ERR_AUTH_INVALID_KEY', 'no'), 'openai', 'req_4', logger);
      answerError(answering().ctx, new GatewayError('TOLLGATE_ERR_PROVIDER_UNCONFIGURED', 'no key'), 'openai', 'req_5', logger);
      expect(lines).to.deep.equal([]);
    });

    it('closes the connection after refusing a body too large to read', () => {
      const { ctx, headers } = answering();
      answerError(ctx, new GatewayError('TOLLGATE_ERR_BODY_TOO_LARGE', 'too large'), 'openai', 'req_6', silent);
      expect(ctx.status).to.equal(413);
      expect(headers).to.include({ connection: 'close' });
    });

    it('leaves an answer alone once it has started, or when the client has gone', () => {
      for (const [sent, writable] of [
        [true, true],
        [false, false],
      ]) {
        const { ctx, headers } = answering(sent, writable);
        const error = answerError(ctx, new GatewayError('TOLLGATE_ERR_AUTH_INVALID_KEY', 'no'), 'openai', 'req_7', silent);
        expect(error.status).to.equal(401);
        expect([ctx.status, ctx.body, headers]).to.deep.equal([404, undefined, {}]);
      }
    });
  });

  describe('methodNotAllowed', () => {
    it('is a 405 naming the method and the endpoint, with Allow: POST in its headers', () => {
      const { ctx, headers } = answering();
      answerError(ctx, methodNotAllowed('GET', ENDPOINTS.messages), ENDPOINTS.messages.errorShape, 'req_8', captureLogger('silent', []));
      expect(ctx.status).to.equal(405);
      expect(headers).to.include({ allow: 'POST' });
      expect(ctx.body).to.deep.include({ type: 'error', error: { type: 'invalid_request_error', message: 'GET is not supported on /v1/messages; use POST.' } });
    });
  });
});
