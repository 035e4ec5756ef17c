/** Reading whole upstream bodies, bounded, and keeping a provider's key out of what is relayed. */
import type { Readable } from 'node:stream';

/** Error bodies are small; one larger than this is cut rather than held. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Thrown by `readBody` for a reply over its cap (server.max_reply_bytes): the upstream is broken, or the limit too low. */
export class ReplyTooLarge extends Error {
  override readonly name = 'ReplyTooLarge';
}

/**
 * Reads a whole body; past `cap` bytes it either cuts (error bodies) or fails (replies). Plain
 * listeners rather than `for await`: the async iterator costs a promise per chunk on the hot path.
 */
export function readBody(body: Readable, cap: number, overflow: 'cut' | 'fail'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const done = () => {
      settled = true;
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    body.on('data', (chunk: Buffer) => {
      if (size + chunk.length <= cap) {
        chunks.push(chunk);
        size += chunk.length;
        return;
      }
      body.removeAllListeners('data').removeAllListeners('end');
      body.destroy();
      if (overflow === 'fail') return reject(new ReplyTooLarge(`the reply exceeds server.max_reply_bytes (${cap} bytes)`));
      chunks.push(chunk.subarray(0, cap - size));
      size = cap;
      done();
    });
    body.once('end', done);
    body.once('error', reject);
    // 'close' follows every 'end' too: an Error (and its stack trace) only when the body really was cut.
    body.once('close', () => {
      if (!settled) reject(new Error('upstream closed the body before its end'));
    });
  });
}

/** An upstream error body with every occurrence of the provider's key blanked, in case it echoed it. */
export function scrubbed(body: Buffer, secret: string): Buffer {
  if (secret.length < 8 || body.indexOf(secret) === -1) return body;
  return Buffer.from(body.toString('utf8').split(secret).join('[redacted]'));
}
