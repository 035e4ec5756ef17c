/**
 * The kernel's own stage in the chain, between auth and the plugins that need the request:
 * read the body as bytes, scan it, parse it once, check the endpoint's required fields and resolve
 * the model. It runs after auth so an unauthenticated client costs no body read.
 */
import { findModel } from '../config/model-aliases';
import type { ModelConfig } from '../config/types';
import type { Endpoint } from '../protocols/types';
import { requestReach } from '../protocols/request-reach';
import { readRawBody } from './body';
import type { GatewayContext, Next, ParsedRequest } from './context';
import { unservableProvider } from '../routing/resolve';
import { GatewayError } from './errors';
import { scanJson } from './json-scan';
import { validateRequest } from './request-validation';

/**
 * Bodies are parsed as JSON whatever their declared type (curl sends form-urlencoded by default, and a
 * bad body still fails parsing with a clear 400); only multipart, which cannot be JSON, is refused.
 */
const NOT_JSON_TYPE = /^multipart\//i;

/** The exposed model name in messages: bounded, so a 10 KB "model" cannot echo back whole. */
function shown(model: string): string {
  const clean = model.replace(/[\u0000-\u001f\u007f]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 80)}…` : clean;
}

function parseBody(raw: Buffer): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    // The parser's message quotes the body: never echo binary or control bytes back, nor much of it.
    const detail = err instanceof SyntaxError ? ` (${shown(err.message.replace(/[\u0080-\u009f\ufffd]/g, '?'))})` : '';
    throw new GatewayError('TOLLGATE_ERR_BODY_INVALID_JSON', `The request body is not valid JSON${detail}.`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('TOLLGATE_ERR_BODY_NOT_OBJECT', 'The request body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}

/** The 400 of a model asked on an endpoint that serves the other kind (a text model on images, an image model on chat). */
function wrongKind(model: ModelConfig, endpoint: Endpoint): GatewayError {
  const where = model.kind === 'image' ? 'POST /v1/images/generations' : 'POST /v1/chat/completions, /v1/responses or /v1/messages';
  return new GatewayError(
    'TOLLGATE_ERR_UNSUPPORTED_PROTOCOL',
    `The model '${model.id}' is ${model.kind === 'image' ? 'an image' : 'a text'} model and is not available on ${endpoint.path}; use ${where}.`,
    { param: 'model' },
  );
}

/** Fills `ctx.state.request`, or throws the 4xx that says what is wrong with the request. */
export async function requestStage(ctx: GatewayContext, next: Next): Promise<void> {
  const { config, endpoint } = ctx.state;
  const contentType = ctx.get('content-type');
  if (NOT_JSON_TYPE.test(contentType)) {
    throw new GatewayError('TOLLGATE_ERR_BODY_CONTENT_TYPE', `Content-Type must be application/json, not "${contentType}".`);
  }
  const raw = await readRawBody(ctx.req, config.server.max_body_bytes);
  if (raw.length === 0) throw new GatewayError('TOLLGATE_ERR_BODY_INVALID_JSON', 'The request body is empty; send a JSON object.');

  const scan = scanJson(raw, config.server.max_json_depth);
  const body = parseBody(raw);
  validateRequest(endpoint.id, body);

  const modelId = body.model as string;
  ctx.state.askedModel = body.model;
  const model = findModel(config, modelId);
  if (model === undefined || scan.modelSpan === null) {
    throw new GatewayError('TOLLGATE_ERR_MODEL_NOT_FOUND', `The model '${shown(modelId)}' does not exist on this gateway.`, {
      param: 'model',
    });
  }
  if (model.kind !== endpoint.serves) throw wrongKind(model, endpoint);
  const reach = requestReach(endpoint.id, body, raw);
  const request: ParsedRequest = { raw, body, model, stream: body.stream === true, modelSpan: scan.modelSpan, reach };
  // Set before the check below, so the request's log line names the model a refusal was about.
  ctx.state.request = request;
  // Refused before billing holds anything: no balance or limit can make such a model answer.
  const unservable = unservableProvider(model, config);
  if (unservable !== null) {
    throw new GatewayError(
      'TOLLGATE_ERR_PROVIDER_UNCONFIGURED',
      `The model '${model.id}' is unavailable: its provider '${unservable.id}' has no API key configured on this gateway.`,
    );
  }
  await next();
}
