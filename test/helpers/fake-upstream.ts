/**
 * A fake LLM provider for end-to-end tests, after Envoy's `testupstream`: one node:http server on
 * 127.0.0.1 that speaks both the OpenAI and the Anthropic protocol, records every request it gets
 * (headers, raw body bytes, and when the caller hung up early), and answers from a FIFO of scripted
 * steps. With nothing queued it answers like a healthy provider in the protocol of the path (see
 * `defaultReply` in upstream-replies.ts).
 *
 *   const fake = await startFakeUpstream();
 *   fake.enqueue(anthropicError(400, 'invalid_request_error', 'prompt is too long'), { hang: true });
 *   ...
 *   expect(fake.requests[0].headers['x-api-key']).to.equal('PROVIDER-SENTINEL-KEY-anthropic');
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { defaultReply } from './upstream-replies';

type Headers = Readonly<Record<string, string | readonly string[]>>;

/** A JSON answer. */
export interface JsonReply {
  readonly status: number;
  readonly headers?: Headers;
  readonly json: unknown;
}

/** A non-JSON answer: `body` is sent as is (content-type `text/plain` unless `headers` names one). */
interface RawReply {
  readonly status: number;
  readonly headers?: Headers;
  readonly body: string | Buffer;
}

/** One SSE frame (`event:` line when `event` is set; `data` JSON-encoded unless a string), or a pause. */
/** A frame, a pause, or a wait for the test to say go (`until`), so a stream stays open exactly as long as a test needs. */
export type SseEvent =
  | { readonly event?: string; readonly data: string | object }
  | { readonly pauseMs: number }
  | { readonly until: Promise<void> };

/** A `text/event-stream` answer, frame by frame; then the end, a TCP reset (`thenReset`) or silence (`thenHang`). */
export interface SseReply {
  readonly status?: number;
  readonly headers?: Headers;
  readonly events: readonly SseEvent[];
  readonly thenReset?: boolean;
  readonly thenHang?: boolean;
  /**
   * The whole stream, headers and end included, in one `end()` call, so it reaches the gateway in a
   * single read (a fast short answer, a buffering proxy). Pauses are ignored.
   */
  readonly oneWrite?: boolean;
}

/** Accepts the request and never answers. */
interface HangStep {
  readonly hang: true;
}

/** Destroys the connection (TCP reset) before answering. */
interface ResetStep {
  readonly reset: true;
}

/** Waits `delayMs` after the request body arrived, then plays `then`. */
interface DelayStep {
  readonly delayMs: number;
  readonly then: UpstreamStep;
}

/** Waits until `until` resolves (the test says when), then plays `then`. */
interface GateStep {
  readonly until: Promise<void>;
  readonly then: UpstreamStep;
}

export type UpstreamStep = JsonReply | RawReply | SseReply | HangStep | ResetStep | DelayStep | GateStep;

/** One request as the fake received it. */
interface RecordedRequest {
  readonly method: string;
  /** The request target as sent, query included. */
  readonly url: string;
  /** The path without the query. */
  readonly path: string;
  /** Node's parsed headers (lower-case names). */
  readonly headers: IncomingHttpHeaders;
  /** Header names and values as sent, in order. */
  readonly rawHeaders: readonly string[];
  /** The body bytes, exactly as received. */
  readonly body: Buffer;
  /** `Date.now()` when the body had fully arrived. */
  readonly receivedAt: number;
  /** `Date.now()` when the caller closed the connection before the response ended; null otherwise. */
  closedAt: number | null;
  /** The body parsed as JSON (throws when it is not JSON). */
  json(): unknown;
}

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  /** Every request received since start or the last `reset()`, in arrival order. */
  readonly requests: RecordedRequest[];
  /** Queues steps; each request consumes the oldest one. */
  enqueue(...steps: UpstreamStep[]): void;
  /** How many queued steps no request has consumed yet. */
  readonly pending: number;
  /** Clears the queue and the recorded requests. */
  reset(): void;
  /** Resolves once `count` requests have been recorded; rejects after `timeoutMs`. */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Resolves with `closedAt` once request `index` has seen its caller hang up; rejects after `timeoutMs`. */
  waitForClose(index: number, timeoutMs?: number): Promise<number>;
  /** Stops listening and destroys every open connection. */
  close(): Promise<void>;
}

/** Polls `check` every 10 ms until it returns a value other than undefined; rejects after `timeoutMs`. */
export async function waitUntil<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function sseFrame(event: { readonly event?: string; readonly data: string | object }): string {
  const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
  const lines = data.split('\n').map((line) => `data: ${line}`);
  return `${event.event === undefined ? '' : `event: ${event.event}\n`}${lines.join('\n')}\n\n`;
}

/** The header object for writeHead: defaults first, the step's own headers win. */
function headersFor(defaults: Record<string, string>, extra: Headers | undefined): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = { ...defaults };
  for (const [name, value] of Object.entries(extra ?? {})) {
    out[name.toLowerCase()] = typeof value === 'string' ? value : [...value];
  }
  return out;
}

/** State of one exchange, so a step knows whether anyone is still listening. */
interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly record: RecordedRequest;
  /** Set when the fake itself cuts the connection, so it is not recorded as the caller's close. */
  selfClosed: boolean;
  gone: boolean;
}

function resetConnection(exchange: Exchange): void {
  exchange.selfClosed = true;
  const socket = exchange.req.socket;
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}

async function play(step: UpstreamStep, exchange: Exchange): Promise<void> {
  const { res } = exchange;
  if ('delayMs' in step) {
    await sleep(step.delayMs);
    if (!exchange.gone) await play(step.then, exchange);
    return;
  }
  if ('until' in step) {
    await step.until;
    if (!exchange.gone) await play(step.then, exchange);
    return;
  }
  if ('hang' in step) return;
  if ('reset' in step) {
    resetConnection(exchange);
    return;
  }
  if ('json' in step) {
    const body = JSON.stringify(step.json);
    res.writeHead(step.status, headersFor({ 'content-type': 'application/json' }, step.headers));
    res.end(body);
    return;
  }
  if ('body' in step) {
    res.writeHead(step.status, headersFor({ 'content-type': 'text/plain' }, step.headers));
    res.end(step.body);
    return;
  }
  res.writeHead(
    step.status ?? 200,
    headersFor({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }, step.headers),
  );
  if (step.oneWrite === true) {
    res.end(step.events.map((event) => ('pauseMs' in event || 'until' in event ? '' : sseFrame(event))).join(''));
    return;
  }
  res.flushHeaders();
  for (const event of step.events) {
    if (exchange.gone) return;
    if ('pauseMs' in event) await sleep(event.pauseMs);
    else if ('until' in event) await event.until;
    else res.write(sseFrame(event));
  }
  if (exchange.gone) return;
  if (step.thenReset === true) {
    // Let the frames already written leave before the reset.
    await sleep(20);
    resetConnection(exchange);
  } else if (step.thenHang !== true) {
    res.end();
  }
}

/** Starts a fake upstream on 127.0.0.1 and a free port. */
export async function startFakeUpstream(): Promise<FakeUpstream> {
  const queue: UpstreamStep[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = req.url ?? '/';
      const body = Buffer.concat(chunks);
      const record: RecordedRequest = {
        method: req.method ?? 'GET',
        url,
        path: url.split('?')[0],
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
        receivedAt: Date.now(),
        closedAt: null,
        json: () => JSON.parse(body.toString('utf8')) as unknown,
      };
      requests.push(record);
      const exchange: Exchange = { req, res, record, selfClosed: false, gone: false };
      res.on('close', () => {
        exchange.gone = true;
        if (!res.writableFinished && !exchange.selfClosed) record.closedAt = Date.now();
      });
      const step = queue.shift() ?? defaultReply(url, body);
      play(step, exchange).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  });
  server.on('connection', (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...steps) => void queue.push(...steps),
    get pending() {
      return queue.length;
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
    },
    waitForRequests: (count, timeoutMs = 2000) =>
      waitUntil(() => (requests.length >= count ? requests : undefined), timeoutMs, `${count} upstream request(s)`),
    waitForClose: (index, timeoutMs = 2000) =>
      waitUntil(() => requests[index]?.closedAt ?? undefined, timeoutMs, `upstream request ${index} to be closed by the caller`),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
