/**
 * Renders a GatewayError in the error envelope of the endpoint that was called
 * (docs/protocols.md#error-shapes): OpenAI `{"error":{message,type,param,code}}`, Anthropic
 * `{"type":"error","error":{type,message}}`. The SDKs read these envelopes (docs/protocols.md#fact-6): any
 * other body reads as "no body".
 */
import { anthropicTypeFor, type GatewayError } from '../kernel/errors';
import { sseFrame } from './sse';
import type { EndpointId, ErrorShape } from './types';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string; details?: Readonly<Record<string, unknown>> };
  request_id?: string;
}

/** The JSON body of an error response. */
export function errorBody(err: GatewayError, shape: ErrorShape, requestId?: string): OpenAIErrorBody | AnthropicErrorBody {
  if (shape === 'anthropic') {
    const body: AnthropicErrorBody = {
      type: 'error',
      error: { type: err.spec.anthropicType ?? anthropicTypeFor(err.status), message: err.message },
    };
    if (err.details !== null) body.error.details = err.details;
    if (requestId !== undefined) body.request_id = requestId;
    return body;
  }
  return { error: { message: err.message, type: err.spec.type, param: err.param, code: err.spec.code } };
}

/**
 * The headers an error response carries besides content-type. `x-should-retry` stops the SDKs'
 * automatic retries where retrying cannot help (docs/protocols.md#fact-7).
 */
export function errorHeaders(err: GatewayError): Record<string, string> {
  const headers: Record<string, string> = { ...err.headers };
  if (err.spec.retry !== undefined) headers['x-should-retry'] = String(err.spec.retry);
  return headers;
}

/**
 * The frame that ends a stream already under way with an error, with no success terminator after it:
 * Messages streams get an `error` event (the SDK throws on it), Responses streams an `error` event of
 * their own shape, chat streams a `data: {"error":…}` frame and no `[DONE]`.
 */
export function streamErrorFrame(err: GatewayError, endpoint: EndpointId): string {
  if (endpoint === 'messages' || endpoint === 'count_tokens') {
    return sseFrame('error', JSON.stringify(errorBody(err, 'anthropic')));
  }
  const body = errorBody(err, 'openai') as OpenAIErrorBody;
  if (endpoint === 'responses') {
    const { message, code, param } = body.error;
    return sseFrame('error', JSON.stringify({ type: 'error', code, message, param }));
  }
  return sseFrame(null, JSON.stringify(body));
}
