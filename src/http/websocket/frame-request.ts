/**
 * A `response.create` frame presented to the chain as the streamed POST it stands for: a request with
 * the handshake's headers (the key, the session, the client's ids) and the frame's body, and a
 * response whose headers go nowhere, since over a socket only the events are sent (`frame-relay.ts`).
 * The chain cannot tell the two transports apart, which is the point.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayState } from '../../kernel/context';
import type { ProxySettings } from '../boundary';
import { EndpointContext } from '../endpoint-context';

/** Headers of the handshake that describe the upgrade or its (empty) body, not the frame's request. */
const UPGRADE_ONLY = new Set([
  'connection',
  'upgrade',
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
]);

/** The POST a frame stands for: the handshake's headers, the frame's JSON body, already complete. */
export function frameRequest(handshake: IncomingMessage, body: Buffer): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(handshake.socket);
  const headers: IncomingMessage['headers'] = {};
  for (const name in handshake.headers) if (!UPGRADE_ONLY.has(name)) headers[name] = handshake.headers[name];
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(body.length);
  req.headers = headers;
  req.method = 'POST';
  req.url = handshake.url;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  req.complete = true;
  req.push(body);
  req.push(null);
  return { req, res: new ServerResponse(req) };
}

/** A frame's context: writable while the socket is open, since nothing is written to its response. */
export class FrameContext extends EndpointContext {
  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    state: GatewayState,
    proxy: ProxySettings,
    private readonly socketOpen: () => boolean,
  ) {
    super(req, res, state, proxy);
  }

  override get writable(): boolean {
    return this.socketOpen();
  }
}
