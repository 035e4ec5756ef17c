/**
 * Sends a frame's answer back over its socket: each event of the streamed answer as one text frame,
 * in order, or an `error` frame in the Responses endpoint's shape when the request was refused. The
 * socket stays open either way. The stream is read as fast as the socket takes it (per-socket
 * backpressure), and let go when the client leaves, which ends the exchange as a client that hangs
 * up on a stream would: charged for what was relayed.
 */
import { Readable } from 'node:stream';
import type { WebSocket } from 'ws';
import { isObject, type Json } from '../../json';
import { SseParser } from '../../protocols/sse';
import type { EndpointContext } from '../endpoint-context';

/** Past this many bytes queued on the socket, the stream waits until the client has read them. */
const HIGH_WATER_BYTES = 1024 * 1024;
/** The longest error body read back into an error frame. */
const MAX_ERROR_BYTES = 64 * 1024;

/** Events after which the response is over and may be continued. */
const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete']);

/** Called with the final `response` object before its event is sent, so the next frame can continue it. */
export type OnFinal = (response: Json) => Promise<void>;

/** Sends `text`; past the high water mark, resolves once the socket has taken it. */
function send(ws: WebSocket, text: string): Promise<void> | null {
  if (ws.readyState !== ws.OPEN) return null;
  if (ws.bufferedAmount < HIGH_WATER_BYTES) {
    ws.send(text);
    return null;
  }
  return new Promise((resolve) => ws.send(text, () => resolve()));
}

/** An `error` frame: OpenAI's WebSocket error event, the HTTP status beside the error envelope's object. */
export function errorFrame(status: number, error: Json): string {
  return JSON.stringify({ type: 'error', status, error });
}

/** Sends what the chain answered on `ctx`; resolves when the answer is over or the client left. */
export async function relayAnswer(ctx: EndpointContext, ws: WebSocket, onFinal: OnFinal): Promise<void> {
  const body = ctx.body;
  if (ctx.status < 400 && body instanceof Readable) return relayStream(body, ws, onFinal);
  const text = await bodyText(body);
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: the text becomes the message below.
  }
  if (ctx.status < 400 && isObject(parsed) && parsed.object === 'response') {
    await onFinal(parsed);
    await send(ws, JSON.stringify({ type: 'response.completed', response: parsed }));
    return;
  }
  const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : { type: 'server_error', code: null, message: text.slice(0, 2000), param: null };
  await send(ws, errorFrame(ctx.status, error));
}

async function relayStream(body: Readable, ws: WebSocket, onFinal: OnFinal): Promise<void> {
  const parser = new SseParser();
  const leave = () => body.destroy();
  ws.once('close', leave);
  try {
    for await (const chunk of body) {
      for (const event of parser.push(chunk as Buffer)) {
        if (event.data === '' || event.data === '[DONE]') continue;
        const name = event.event ?? eventType(event.data);
        if (name !== null && FINAL_EVENTS.has(name)) {
          const parsed: unknown = JSON.parse(event.data);
          if (isObject(parsed) && isObject(parsed.response)) await onFinal(parsed.response);
        }
        const wait = send(ws, event.data);
        if (wait !== null) await wait;
      }
    }
  } catch {
    // The stream was let go (the client left) or failed after its events: the exchange records which.
  } finally {
    ws.off('close', leave);
  }
}

/** The `type` of an event sent without an `event:` line. */
function eventType(data: string): string | null {
  try {
    const parsed: unknown = JSON.parse(data);
    return isObject(parsed) && typeof parsed.type === 'string' ? parsed.type : null;
  } catch {
    return null;
  }
}

async function bodyText(body: unknown): Promise<string> {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (body instanceof Readable) {
    const pieces: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      const piece = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      if (size < MAX_ERROR_BYTES) pieces.push(piece);
      size += piece.length;
    }
    return Buffer.concat(pieces).toString('utf8');
  }
  return body === undefined || body === null ? '' : JSON.stringify(body);
}
