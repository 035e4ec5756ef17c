/**
 * The HTTP upgrade of `GET /v1/responses` to a WebSocket (OpenAI's WebSocket mode): the Responses
 * endpoint over another transport, not a new path. The key is checked at the handshake as a POST's
 * is (the auth plugin itself, its failure limits and networks), and again on every frame, which runs
 * the whole chain. Where the operator turned WebSocket mode off the upgrade gets 426, so clients fall
 * back to HTTP at once; an upgrade of any other path is answered as the plain request it also is.
 */
import { ServerResponse, type IncomingMessage, type RequestListener } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type * as Ws from 'ws';
import type { WebSocketServer } from 'ws';
import type { GatewayContext, GatewayState } from '../../kernel/context';
import { GatewayError } from '../../kernel/errors';
import type { RuntimeRef } from '../../kernel/runtime';
import type { Endpoint } from '../../protocols/types';
import { openRequest, reportSendError } from '../boundary';
import { EndpointContext } from '../endpoint-context';
import { runModelRequest, type ModelRequestDeps } from '../model-request';
import type { OpenSockets } from './open-sockets';
import { SocketSession } from './socket-session';
import { onFirstUse } from '../../on-first-use';

/** Loaded by the first WebSocket upgrade: a gateway whose clients only POST never holds it. */
const ws = onFirstUse(() => require('ws') as typeof Ws);

export interface UpgradeDeps {
  readonly runtime: RuntimeRef;
  readonly request: ModelRequestDeps;
  readonly sockets: OpenSockets;
  /** The server's request listener, for an upgrade that is not ours to take. */
  readonly listener: RequestListener;
}

/** Whether the request asks for a WebSocket (rather than another protocol Tollgate does not speak). */
export function wantsWebSocket(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

function disabled(): GatewayError {
  return new GatewayError('TOLLGATE_ERR_WEBSOCKET_DISABLED', 'WebSocket mode is turned off on this gateway; send POST /v1/responses instead.');
}

function shuttingDown(): GatewayError {
  return new GatewayError('TOLLGATE_ERR_UPSTREAM_OVERLOADED', 'This gateway is shutting down; connect again.', { headers: { 'retry-after': '1' } });
}

/**
 * Answers an upgrade request as the plain HTTP request it also is, on the request listener: the
 * connection closes after the answer, since the server no longer reads requests from it.
 */
export function answerAsHttp(req: IncomingMessage, socket: Duplex, listener: RequestListener): void {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.once('finish', () => socket.end());
  listener(req, res);
}

/** The auth plugin's check of the handshake's key, exactly as a POST gets it; nothing else of the chain runs. */
async function authenticate(runtime: RuntimeRef, ctx: GatewayContext): Promise<void> {
  const auth = runtime.current.chain.instance('auth');
  if (auth !== undefined) await auth.handle(ctx, () => Promise.resolve());
}

/** The upgrade handler of `GET /v1/responses`. */
export function responsesUpgrade(deps: UpgradeDeps, endpoint: Endpoint) {
  // One server per frame size limit: the cap it enforces is set when it is made.
  let servers: { limit: number; wss: WebSocketServer } | null = null;
  function serverFor(limit: number): WebSocketServer {
    if (servers?.limit !== limit) {
      // Frames up to the limit are read and run; up to twice it, read and refused with an error frame;
      // beyond, closed (1009) without being held whole.
      servers = { limit, wss: new (ws().WebSocketServer)({ noServer: true, clientTracking: false, perMessageDeflate: false, maxPayload: limit * 2 }) };
    }
    return servers.wss;
  }

  return async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const startedAt = performance.now();
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    const { config } = deps.runtime.current;
    const state: GatewayState = { ...openRequest(req, res), config, endpoint };
    const ctx = new EndpointContext(req, res, state, config.server);
    let accepted = false;
    const handshake = async () => {
      if (!config.server.websocket) throw disabled();
      if (deps.sockets.closing) throw shuttingDown();
      await authenticate(deps.runtime, ctx);
      accepted = true;
      ctx.status = 101;
    };
    const send = () => {
      if (!accepted) {
        res.once('finish', () => socket.end());
        ctx.respond((err) => reportSendError(err, deps.request.logger));
        return;
      }
      res.detachSocket(socket as Socket);
      serverFor(config.server.max_body_bytes).handleUpgrade(req, socket, head, (ws) => {
        const session = new SocketSession(ws, req, { runtime: deps.runtime, request: deps.request, endpoint, accountId: state.auth?.account.id ?? '' });
        deps.sockets.add(session, new Promise((resolve) => ws.once('close', () => resolve())));
      });
    };
    await runModelRequest(ctx, { at: startedAt, trace: undefined, refusable: true }, handshake, send, deps.request);
  };
}
