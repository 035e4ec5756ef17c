/**
 * The endpoints' own context, over a real server and socket: what it reads of the request (headers,
 * query, the client's address behind proxies) and how `respond()` sends each kind of body.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { request } from 'undici';
import type { GatewayConfig } from '../../src/config/types';
import type { GatewayState } from '../../src/kernel/context';
import { EndpointContext } from '../../src/http/endpoint-context';

type Handler = (ctx: EndpointContext) => void;

const DIRECT: GatewayConfig['server'] = { trust_proxy: false, trusted_proxy_hops: 1 } as GatewayConfig['server'];

describe('http/EndpointContext', () => {
  let server: Server;
  let url: string;
  let handler: Handler;
  let proxy: GatewayConfig['server'];
  let streamErrors: Error[];

  before(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const ctx = new EndpointContext(req, res, { requestId: 'req_test' } as GatewayState, proxy);
      handler(ctx);
      ctx.respond((error) => streamErrors.push(error));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    proxy = DIRECT;
    streamErrors = [];
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function call(handle: Handler, headers: Record<string, string> = {}, path = '/v1/chat/completions') {
    handler = handle;
    const res = await request(url + path, { method: 'POST', body: '{}', headers });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  it('reads request headers by any case, and "" for one that is absent', async () => {
    const seen: string[] = [];
    await call(
      (ctx) => {
        seen.push(ctx.get('X-Api-Key'), ctx.get('x-missing'), String(ctx.headers['x-api-key']));
        ctx.body = 'ok';
      },
      { 'x-api-key': 'sk-1' },
    );
    expect(seen).to.deep.equal(['sk-1', '', 'sk-1']);
  });

  it('parses the query only when asked, and gives an empty one without a "?"', async () => {
    const queries: unknown[] = [];
    await call((ctx) => void (queries.push({ ...ctx.query }), (ctx.body = 'a')), {}, '/v1/messages?beta=true&x=1');
    await call((ctx) => void (queries.push({ ...ctx.query }), (ctx.body = 'b')), {}, '/v1/messages');
    expect(queries).to.deep.equal([{ beta: 'true', x: '1' }, {}]);
  });

  it('takes the socket peer as the address, whatever X-Forwarded-For says, unless the proxy is trusted', async () => {
    const addresses: string[] = [];
    const record: Handler = (ctx) => void (addresses.push(ctx.ip), (ctx.body = 'ok'));
    await call(record, { 'x-forwarded-for': '203.0.113.1' });
    proxy = { trust_proxy: true, trusted_proxy_hops: 1 } as GatewayConfig['server'];
    await call(record, { 'x-forwarded-for': '10.0.0.9, 203.0.113.1' });
    proxy = { trust_proxy: true, trusted_proxy_hops: 2 } as GatewayConfig['server'];
    await call(record, { 'x-forwarded-for': '10.0.0.9, 198.51.100.4 , 203.0.113.1' });
    await call(record);
    expect(addresses).to.deep.equal(['127.0.0.1', '203.0.113.1', '198.51.100.4', '127.0.0.1']);
  });

  it('sends bytes with their length, and a type only when none was set', async () => {
    const typed = await call((ctx) => {
      ctx.status = 201;
      ctx.set({ 'content-type': 'application/json', 'x-one': '1' });
      ctx.body = Buffer.from('{"a":1}');
    });
    expect(typed).to.deep.include({ status: 201, text: '{"a":1}' });
    expect(typed.headers).to.include({ 'content-type': 'application/json', 'content-length': '7', 'x-one': '1' });
    const untyped = await call((ctx) => void (ctx.body = Buffer.from('xyz')));
    expect(untyped.status).to.equal(200);
    expect(untyped.headers).to.include({ 'content-type': 'application/octet-stream', 'content-length': '3' });
  });

  it('sends an object as JSON, a string as text, and nothing for a 204', async () => {
    const json = await call((ctx) => {
      ctx.status = 402;
      ctx.body = { error: { message: 'née' } };
    });
    expect(json).to.deep.include({ status: 402, text: '{"error":{"message":"née"}}' });
    expect(json.headers).to.include({ 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(json.text)) });
    const text = await call((ctx) => void (ctx.body = 'plain'));
    expect(text.headers['content-type']).to.equal('text/plain; charset=utf-8');
    const empty = await call((ctx) => {
      ctx.status = 204;
      ctx.body = 'ignored';
    });
    expect(empty).to.deep.include({ status: 204, text: '' });
  });

  it('answers a body never set with its status text, as Koa does', async () => {
    const missing = await call(() => undefined);
    expect(missing).to.deep.include({ status: 404, text: 'Not Found' });
  });

  it('pipes a stream as it comes, without a length, and tears it down when the client leaves', async () => {
    const piped = await call((ctx) => {
      ctx.set('content-type', 'text/event-stream');
      ctx.body = Readable.from(['data: 1\n\n', 'data: 2\n\n']);
    });
    expect(piped.text).to.equal('data: 1\n\ndata: 2\n\n');
    expect(piped.headers).to.include({ 'content-type': 'text/event-stream', 'transfer-encoding': 'chunked' });
    expect(piped.headers).to.not.have.property('content-length');

    let destroyed!: () => void;
    const torn = new Promise<void>((resolve) => (destroyed = resolve));
    handler = (ctx) => {
      const endless = new Readable({ read() {} });
      endless.push('data: first\n\n');
      endless.once('close', destroyed);
      ctx.body = endless;
    };
    const res = await request(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    for await (const chunk of res.body) {
      expect(String(chunk)).to.equal('data: first\n\n');
      res.body.destroy();
      break;
    }
    await torn;
    // A client leaving is the pipe's error to hear, not a crash.
    expect(streamErrors.length).to.be.at.most(1);
  });

  it('ignores headers set after the response has started', async () => {
    const answer = await call((ctx) => {
      ctx.res.flushHeaders();
      ctx.set('x-late', 'yes');
      ctx.body = 'body';
    });
    expect(answer.headers).to.not.have.property('x-late');
  });
});
