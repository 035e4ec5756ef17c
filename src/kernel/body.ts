/**
 * Reading the request body as bytes, with a hard size limit, before anything else looks at it.
 * The bytes are what a native route forwards, so nothing here re-encodes them; a gzip-encoded body
 * (`Content-Encoding: gzip`) is decompressed first, and the limit holds for what it decompresses to.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createGunzip, createInflate } from 'node:zlib';
import { GatewayError } from './errors';

type Decoder = () => NodeJS.ReadWriteStream & Readable;

/** The encodings understood; zlib works in bounded chunks on its thread pool, never blocking the loop. */
const DECODERS: Readonly<Record<string, Decoder>> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
};

/**
 * Reads the whole body, refusing at once (413) when Content-Length announces more than `limit` and
 * cutting a chunked upload off as soon as it crosses the limit, so an oversized body never sits in
 * memory. A compressed body is cut off as soon as what it decompresses to crosses the limit (a small
 * gzip bomb gets the same 413 as a large body); an encoding not understood gets 415.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new GatewayError('TOLLGATE_ERR_BODY_TOO_LARGE', `Request body exceeds the limit of ${limit} bytes.`);
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge());
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return collect(req, req, limit, tooLarge);
  const decoder = Object.hasOwn(DECODERS, encoding) ? DECODERS[encoding] : undefined;
  if (decoder === undefined) {
    return Promise.reject(
      new GatewayError('TOLLGATE_ERR_BODY_CONTENT_ENCODING', `Content-Encoding "${encoding.slice(0, 40)}" is not supported; send the body as is or gzip-encoded.`),
    );
  }
  const decoded = decoder();
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    // What arrives on the wire is bounded too, whatever it decompresses to.
    if (received > limit) decoded.destroy(tooLarge());
  });
  req.pipe(decoded);
  return collect(decoded, req, limit, tooLarge).catch((error: unknown) => {
    req.unpipe(decoded);
    decoded.destroy();
    if (error instanceof GatewayError || (error instanceof Error && error.message.startsWith('client closed'))) throw error;
    throw new GatewayError('TOLLGATE_ERR_BODY_INVALID_ENCODING', `The request body is not valid ${encoding} data.`);
  });
}

/** Collects `source` (the request or its decoder) up to `limit` bytes; `req` says when the client left. */
function collect(source: Readable, req: IncomingMessage, limit: number, tooLarge: () => GatewayError): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        // Stop reading; the response (413) is sent and the connection closed after it.
        source.pause();
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
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
    req.on('close', onClose);
  });
}
