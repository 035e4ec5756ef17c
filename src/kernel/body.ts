/**
 * Reading the request body as bytes, with a hard size limit, before anything else looks at it.
 * The bytes are what a native route forwards, so nothing here decodes or re-encodes them.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from './errors';

/**
 * Reads the whole body, refusing at once (413) when Content-Length announces more than `limit` and
 * cutting a chunked upload off as soon as it crosses the limit, so an oversized body never sits in memory.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new GatewayError('TOLLGATE_ERR_BODY_TOO_LARGE', `Request body exceeds the limit of ${limit} bytes.`);
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge());

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        // Stop reading; the response (413) is sent and the connection closed after it.
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new Error('client closed the connection while sending the body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
