/**
 * A PostgreSQL connection reset in the middle of a key lookup (a TCP proxy in front of the database
 * resets the connection that carries the lookup's query) answers 503 auth_unavailable with retry-after,
 * never a 500 or a 401, and the next request, on a fresh connection, is served.
 * Skipped, saying so, without PostgreSQL.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';

/** Relays to PostgreSQL; while armed, a connection that sends anything is reset instead. */
class ResettingProxy {
  armed = false;
  resets = 0;
  private readonly server: Server;

  private constructor(target: URL) {
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      const sockets: Socket[] = [client, upstream];
      for (const socket of sockets) socket.on('error', () => undefined);
      client.on('data', (chunk: Buffer) => {
        if (!this.armed) {
          upstream.write(chunk);
          return;
        }
        this.resets += 1;
        client.resetAndDestroy();
        upstream.destroy();
      });
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  static async start(target: URL): Promise<ResettingProxy> {
    const proxy = new ResettingProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('faults: a connection reset during the key lookup (PostgreSQL)', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let proxy: ResettingProxy;
  let gateway: Gateway;
  let store: Store;

  before(async function () {
    const problem = await postgresProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    const url = new URL(database.url);
    proxy = await ResettingProxy.start(url);
    const proxied = new URL(database.url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const yaml = `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${proxied.toString()}" }
providers:
  echo: { protocol: echo }
models:
  tollgate-echo: { family: openai, routes: [{ provider: echo }], free: true }
`;
    gateway = await startGateway({ config: parseConfig(yaml, 'reset.yaml', {}), port: 0, logger: pino({ level: 'silent' }) });
    store = openStore({ url: database.url });
  });

  after(async () => {
    await gateway?.stop(500);
    await store?.close();
    await proxy?.close();
    await database?.drop();
  });

  function ask(key: string): Promise<Response> {
    return fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tollgate-echo', messages: [{ role: 'user', content: 'hi' }] }),
    });
  }

  it('answers 503 auth_unavailable with retry-after, then serves the key once the database answers', async () => {
    const account = await store.createAccount({ name: 'reset', role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    // Never looked up by the gateway yet: its lookup must reach the database, and its connection is reset.
    proxy.armed = true;
    let refused: Response;
    try {
      refused = await ask(key);
    } finally {
      proxy.armed = false;
    }
    expect(proxy.resets, 'a connection was reset').to.be.above(0);
    expect(refused.status).to.equal(503);
    expect(refused.headers.get('retry-after')).to.equal('1');
    expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal('auth_unavailable');
    const served = await ask(key);
    expect(served.status, 'the next lookup, on a fresh connection').to.equal(200);
    await served.arrayBuffer();
  });
});
