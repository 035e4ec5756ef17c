/**
 * The context of a request to one of the model endpoints, without Koa: the few members the chain uses
 * (headers in and out, status, body, the client's address, the query) over node's request and
 * response, and `respond()`, which sends the body the way Koa would. Koa's context (delegated getters,
 * its router and composer, on-finished) cost a measurable share of a request's CPU here
 * (docs/benchmarks.md); the console, its API and the operator's routes, where that does not matter,
 * stay on Koa.
 */
import { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import { Readable } from 'node:stream';
import type { GatewayContext, GatewayState } from '../kernel/context';
import { clientAddress, type ProxySettings } from './boundary';

/** Statuses whose responses carry no body. */
const EMPTY_STATUSES = new Set([204, 205, 304]);
const NO_QUERY: ParsedUrlQuery = Object.freeze(Object.create(null) as ParsedUrlQuery);

export class EndpointContext implements GatewayContext {
  private statusCode = 404;
  private statusSet = false;
  private bodyValue: unknown = undefined;
  private address: string | null = null;
  private parsedQuery: ParsedUrlQuery | null = null;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly state: GatewayState,
    private readonly proxy: ProxySettings,
  ) {}

  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }

  get(field: string): string {
    const value = this.req.headers[field.toLowerCase()];
    return typeof value === 'string' ? value : (value?.[0] ?? '');
  }

  set(field: string | Readonly<Record<string, string>>, value?: string): void {
    if (this.res.headersSent) return;
    if (typeof field === 'string') {
      this.res.setHeader(field, value ?? '');
      return;
    }
    for (const name in field) this.res.setHeader(name, field[name]);
  }

  get status(): number {
    return this.statusCode;
  }

  set status(code: number) {
    this.statusCode = code;
    this.statusSet = true;
  }

  get body(): unknown {
    return this.bodyValue;
  }

  set body(value: unknown) {
    this.bodyValue = value;
    if (!this.statusSet) this.statusCode = value === null || value === undefined ? 204 : 200;
  }

  get query(): ParsedUrlQuery {
    if (this.parsedQuery === null) {
      const url = this.req.url ?? '';
      const mark = url.indexOf('?');
      this.parsedQuery = mark === -1 ? NO_QUERY : parseQuery(url.slice(mark + 1));
    }
    return this.parsedQuery;
  }

  /** The client's address under the proxy settings (`clientAddress`), read once. */
  get ip(): string {
    return (this.address ??= clientAddress(this.req, this.proxy));
  }

  /** Whether the response can still be written: not ended, and the client's socket still open. */
  get writable(): boolean {
    if (this.res.writableEnded) return false;
    const socket = this.res.socket;
    return socket === null || socket.writable;
  }

  /**
   * Sends the status, headers and body: bytes and strings whole with their length, a stream piped (and
   * torn down if the client leaves), anything else as JSON. `onStreamError` hears a stream that failed
   * after its headers left.
   */
  respond(onStreamError: (error: Error) => void): void {
    const { res } = this;
    if (!this.writable) {
      res.end();
      return;
    }
    if (!res.headersSent) res.statusCode = this.statusCode;
    const body = this.bodyValue;
    if (EMPTY_STATUSES.has(this.statusCode)) {
      res.end();
      return;
    }
    if (body instanceof Readable) {
      if (!res.headersSent) {
        this.defaultType('application/octet-stream');
        res.removeHeader('content-length');
      }
      pipeAnswer(body, res, onStreamError);
      return;
    }
    let bytes: Buffer | string;
    if (Buffer.isBuffer(body)) {
      bytes = body;
      this.defaultType('application/octet-stream');
    } else if (typeof body === 'string') {
      bytes = body;
      this.defaultType('text/plain; charset=utf-8');
    } else if (body === null || body === undefined) {
      bytes = STATUS_CODES[this.statusCode] ?? String(this.statusCode);
      this.defaultType('text/plain; charset=utf-8');
    } else {
      bytes = JSON.stringify(body);
      this.defaultType('application/json; charset=utf-8');
    }
    if (!res.headersSent) res.setHeader('content-length', Buffer.byteLength(bytes));
    res.end(bytes);
  }

  private defaultType(type: string): void {
    if (!this.res.headersSent && !this.res.hasHeader('content-type')) this.res.setHeader('content-type', type);
  }
}

/**
 * Pipes a streamed answer to the client; when the response closes first (the client left), the
 * stream is destroyed, which lets its upstream go. Not `stream.pipeline`: it makes an AbortController
 * per call and aborts it when done, a DOMException built for every stream (its CPU per stream is in
 * docs/benchmarks.md) for a teardown this does with two listeners.
 */
function pipeAnswer(body: Readable, res: ServerResponse, onStreamError: (error: Error) => void): void {
  body.once('error', (error: Error) => {
    onStreamError(error);
    res.destroy();
  });
  res.once('close', () => {
    if (!body.destroyed) body.destroy();
  });
  body.pipe(res);
}
