/**
 * The attempt's own abort: the part of AbortSignal the senders use, and undici honouring it, so that
 * a deadline or a client that left still cancels the request on the wire.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Pool } from 'undici';
import { AttemptAbort } from '../../src/upstream/attempt-abort';

describe('upstream/AttemptAbort', () => {
  it('calls each listener once, in order, with the reason set, and only on the first abort', () => {
    const abort = new AttemptAbort();
    const calls: string[] = [];
    abort.addEventListener('abort', () => calls.push(`a:${String(abort.reason)}`));
    abort.addEventListener('abort', () => calls.push(`b:${String(abort.aborted)}`));
    expect(abort.aborted).to.equal(false);
    abort.abort('deadline');
    abort.abort('client-closed');
    expect(calls).to.deep.equal(['a:deadline', 'b:true']);
    expect(abort.reason).to.equal('deadline');
  });

  it('never calls a listener removed before the abort, nor one added after it', () => {
    const abort = new AttemptAbort();
    const calls: string[] = [];
    const removed = () => calls.push('removed');
    abort.addEventListener('abort', removed);
    abort.addEventListener('abort', () => calls.push('kept'));
    abort.removeEventListener('abort', removed);
    abort.abort('deadline');
    abort.addEventListener('abort', () => calls.push('late'));
    expect(calls).to.deep.equal(['kept']);
  });

  it('throws its reason from throwIfAborted once aborted, and nothing before', () => {
    const abort = new AttemptAbort();
    expect(() => abort.throwIfAborted()).to.not.throw();
    abort.abort('client-closed');
    expect(() => abort.throwIfAborted()).to.throw().that.equals('client-closed');
  });

  describe('as the signal of an undici request', () => {
    let server: Server;
    let pool: Pool;
    let closed: Promise<void>;

    before(async () => {
      // Answers nothing: only an abort can end the request.
      let sawClose!: () => void;
      closed = new Promise((resolve) => (sawClose = resolve));
      server = createServer((req) => req.socket.once('close', sawClose));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });

    after(async () => {
      await pool.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('cancels a request under way: it rejects, and the upstream sees its connection closed', async () => {
      const abort = new AttemptAbort();
      const pending = pool.request({ method: 'POST', path: '/', body: '{}', signal: abort.signal });
      setTimeout(() => abort.abort('deadline'), 50);
      let rejected = false;
      await pending.catch(() => (rejected = true));
      expect(rejected).to.equal(true);
      await closed;
    });

    it('refuses at once a request whose attempt was already aborted', async () => {
      const abort = new AttemptAbort();
      abort.abort('client-closed');
      let rejected = false;
      await pool.request({ method: 'POST', path: '/', body: '{}', signal: abort.signal }).catch(() => (rejected = true));
      expect(rejected).to.equal(true);
    });
  });
});
