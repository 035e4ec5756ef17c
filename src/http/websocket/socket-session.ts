/**
 * One client's WebSocket on /v1/responses: its `response.create` frames, one at a time, each run as
 * the streamed POST it stands for (`frame-request.ts`) through the same request path as HTTP
 * (`runModelRequest`), its events sent back as frames (`frame-relay.ts`). A frame with
 * `generate: false` (Codex sends one to warm the socket up) is answered here, with no model called
 * and nothing charged. The socket closes when idle, when a frame is over the size limit, and on
 * shutdown once its response is over.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { isObject, type Json } from '../../json';
import type { GatewayState } from '../../kernel/context';
import { GatewayError, toGatewayError } from '../../kernel/errors';
import { scanJson } from '../../kernel/json-scan';
import type { RuntimeRef } from '../../kernel/runtime';
import { newResponsesId } from '../../protocols/openai-responses/items';
import { nowSeconds } from '../../protocols/openai-responses/response-object';
import type { Endpoint } from '../../protocols/types';
import { errorBody, type OpenAIErrorBody } from '../../protocols/errors';
import { openRequest } from '../boundary';
import { runModelRequest, type ModelRequestDeps } from '../model-request';
import { errorFrame, relayAnswer } from './frame-relay';
import { FrameContext, frameRequest } from './frame-request';
import { continueRequest, rememberTurn, type ContinuedRequest, type TurnMemory } from './turn-memory';

/** WebSocket close codes (RFC 6455). */
const NORMAL = 1000;
const GOING_AWAY = 1001;
const TOO_BIG = 1009;

export interface SessionDeps {
  readonly runtime: RuntimeRef;
  readonly request: ModelRequestDeps;
  readonly endpoint: Endpoint;
  /** The account the handshake's key belongs to: whose turns the socket continues. */
  readonly accountId: string;
}

export class SocketSession {
  private busy = false;
  private draining = false;
  private idle: NodeJS.Timeout;
  /** Whether a pong (or any frame) came since the last ping. */
  alive = true;

  constructor(
    private readonly ws: WebSocket,
    private readonly handshake: IncomingMessage,
    private readonly deps: SessionDeps,
  ) {
    this.idle = setTimeout(() => this.close(NORMAL, 'idle timeout'), this.idleMs()).unref();
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('close', () => clearTimeout(this.idle));
    // A protocol error (a frame over the hard cap, bad framing): ws closes the socket itself.
    ws.on('error', () => undefined);
  }

  get inFlight(): boolean {
    return this.busy;
  }

  /** Shutdown: closes the socket now when idle, else once its response is over. */
  drain(): void {
    this.draining = true;
    if (!this.busy) this.close(GOING_AWAY, 'server shutting down');
  }

  /** Pings the client; a client that did not answer the last ping is gone. */
  ping(): void {
    if (!this.alive) {
      this.ws.terminate();
      return;
    }
    this.alive = false;
    this.ws.ping();
  }

  terminate(): void {
    this.ws.terminate();
  }

  private idleMs(): number {
    return this.deps.runtime.current.config.server.websocket_idle_timeout_ms;
  }

  private close(code: number, reason: string): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }

  private refuse(error: GatewayError): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(errorFrame(error.status, (errorBody(error, 'openai') as OpenAIErrorBody).error));
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    this.alive = true;
    this.idle.refresh();
    const limit = this.deps.runtime.current.config.server.max_body_bytes;
    if (data.length > limit) {
      this.refuse(new GatewayError('TOLLGATE_ERR_BODY_TOO_LARGE', `The frame exceeds the limit of ${limit} bytes.`));
      this.close(TOO_BIG, 'frame too large');
      return;
    }
    let event: Json | null = null;
    if (!isBinary) {
      try {
        // The same scan as an HTTP body gets (depth, and what else it refuses), on the bytes as sent.
        scanJson(data, this.deps.runtime.current.config.server.max_json_depth);
      } catch (error) {
        this.refuse(toGatewayError(error));
        return;
      }
      event = parseEvent(data);
    }
    if (event === null || event.type !== 'response.create') {
      const shown = event === null ? 'a frame that is not a JSON object' : `an event of type ${JSON.stringify(String(event.type)).slice(0, 80)}`;
      this.refuse(new GatewayError('TOLLGATE_ERR_WEBSOCKET_EVENT_INVALID', `Expected a text frame with a response.create event; got ${shown}.`, { param: 'type' }));
      return;
    }
    if (this.busy) {
      this.refuse(
        new GatewayError('TOLLGATE_ERR_WEBSOCKET_RESPONSE_IN_FLIGHT', 'A response is already in progress on this connection; wait for it to finish, or open another connection.'),
      );
      return;
    }
    this.busy = true;
    void this.create(event).then(
      () => this.settle(),
      (error: unknown) => {
        this.deps.request.logger.error({ err: error }, 'websocket: a response.create failed');
        this.refuse(toGatewayError(error));
        this.settle();
      },
    );
  }

  private settle(): void {
    this.busy = false;
    this.idle.refresh();
    if (this.draining) this.close(GOING_AWAY, 'server shutting down');
  }

  private memory(): TurnMemory | null {
    const store = this.deps.runtime.current.chain.service('translate')?.minted;
    return store === undefined ? null : { store, scope: this.deps.accountId };
  }

  private async create(event: Json): Promise<void> {
    const { type: _type, generate, ...body } = event;
    const memory = this.memory();
    const request = await continueRequest(body, memory);
    if (generate === false) return this.warmUp(request, memory);
    const startedAt = performance.now();
    const bytes = Buffer.from(JSON.stringify({ ...request.body, stream: true }));
    const { req, res } = frameRequest(this.handshake, bytes);
    const { runtime, request: requestDeps, endpoint } = this.deps;
    const { config, chain } = runtime.current;
    const trace = requestDeps.tracing.startRequest(req.headers, endpoint, startedAt);
    const state: GatewayState = { ...openRequest(req, res), config, endpoint, trace };
    const ctx = new FrameContext(req, res, state, config.server, () => this.ws.readyState === this.ws.OPEN);
    // Before the answer is committed, a client that leaves stops the attempts, as on HTTP.
    const left = () => res.emit('close');
    this.ws.once('close', left);
    let sent: Promise<void> = Promise.resolve();
    try {
      await runModelRequest(
        ctx,
        { at: startedAt, trace, refusable: true },
        () => chain.run(ctx),
        () => {
          sent = relayAnswer(ctx, this.ws, (response) => this.keep(memory, request, response));
        },
        requestDeps,
      );
      await sent;
    } finally {
      this.ws.off('close', left);
      // The answer is over: untracked for shutdown.
      res.emit('close');
    }
  }

  private async keep(memory: TurnMemory | null, request: ContinuedRequest, response: Json): Promise<void> {
    if (typeof response.id !== 'string') return;
    const output = Array.isArray(response.output) ? response.output.filter(isObject) : [];
    await rememberTurn(memory, request, response.id, output).catch((error: unknown) =>
      this.deps.request.logger.warn({ err: error }, 'websocket: a response could not be kept for the next frame'),
    );
  }

  /** `generate: false`: a response with no output, kept so the next frame can continue from it; nothing is called or charged. */
  private async warmUp(request: ContinuedRequest, memory: TurnMemory | null): Promise<void> {
    const id = newResponsesId('resp');
    const model = typeof request.body.model === 'string' ? request.body.model : '';
    const response: Json = {
      id,
      object: 'response',
      created_at: nowSeconds(),
      status: 'in_progress',
      model,
      output: [],
      previous_response_id: request.previous,
      store: request.body.store ?? false,
    };
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response }));
    await this.keep(memory, request, response);
    const usage = { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 };
    const completed = { ...response, status: 'completed', completed_at: nowSeconds(), usage };
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify({ type: 'response.completed', sequence_number: 1, response: completed }));
  }
}

function parseEvent(data: Buffer): Json | null {
  try {
    const parsed: unknown = JSON.parse(data.toString('utf8'));
    return isObject(parsed) && !Array.isArray(parsed) ? parsed : null;
  } catch {
    return null;
  }
}
