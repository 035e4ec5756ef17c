/**
 * The Responses `response` object (docs/protocols.md#responses-reply): its identity, status, error and usage
 * around the output items, built the same way for a non-streamed reply and for a stream's events.
 */
import type { GatewayError } from '../../kernel/errors';
import { cacheWriteTotal, type Usage } from '../types';
import type { TurnStop } from '../turn';
import type { ResponseOutputItem, ResponseStatus } from './items';
import type { ResponsesRequestEcho } from './request-echo';

/** The Responses `usage` object; `cached_tokens` and `cache_write_tokens` are subsets of `input_tokens`. */
interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** Status of the `response` object itself: items never fail, a response can. */
export type ResponseObjectStatus = ResponseStatus | 'failed';

/**
 * The `error.code` values the OpenAPI `ResponseErrorCode` enum allows; the rest of that enum is about
 * images and vector stores, which Tollgate never reports mid-stream.
 */
type ResponseErrorCode = 'server_error' | 'rate_limit_exceeded' | 'invalid_prompt';

/** The `error` of a failed response. */
export interface ResponseErrorObject {
  code: ResponseErrorCode;
  message: string;
}

/** The `response` object: its identity and outcome, and the request fields it repeats back. */
export interface ResponseObject extends Required<ResponsesRequestEcho> {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseObjectStatus;
  completed_at: number | null;
  error: ResponseErrorObject | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  model: string;
  output: ResponseOutputItem[];
  reasoning: null;
  text: { format: { type: 'text' } };
  truncation: 'disabled';
  /** Absent until the end: the schema has no null usage, though OpenAI's examples show one. */
  usage?: ResponsesUsage;
}

/** What every `response` object of one reply shares: its id, creation time, model and echo. */
export interface ResponseIdentity {
  readonly id: string;
  readonly model: string;
  readonly createdAt: number;
  readonly echo: ResponsesRequestEcho;
}

/** The current time in Unix seconds, as `created_at` and `completed_at` take it. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/**
 * Neutral usage in Responses terms: input includes the cache reads and writes
 * (docs/protocols.md#responses-to-messages).
 */
function toResponsesUsage(usage: Usage): ResponsesUsage {
  const input = usage.inputTokens + cacheWriteTotal(usage) + usage.cacheReadTokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens, cache_write_tokens: cacheWriteTotal(usage) },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + usage.outputTokens,
  };
}

/**
 * The status a turn's stop gives the response: a cut-off answer is `incomplete`
 * (docs/protocols.md#responses-to-messages).
 */
export function finalStatus(stop: TurnStop): 'completed' | 'incomplete' {
  return stop === 'max_tokens' ? 'incomplete' : 'completed';
}

/**
 * The response `error` for a GatewayError. The schema allows a fixed list of codes, none of them
 * ours, so the status picks the nearest: 429 a rate limit, another 4xx a prompt the upstream
 * refused, anything else a server error. The message is the one every error envelope shows.
 */
export function responseError(error: GatewayError): ResponseErrorObject {
  const { message } = error;
  if (error.status === 429) return { code: 'rate_limit_exceeded', message };
  if (error.status >= 400 && error.status < 500) return { code: 'invalid_prompt', message };
  return { code: 'server_error', message };
}

/** The `response` object with the given outcome; echoed fields the client left out get the API's defaults. */
export function responseObject(
  who: ResponseIdentity,
  status: ResponseObjectStatus,
  output: ResponseOutputItem[],
  usage: Usage | null,
  error: ResponseErrorObject | null = null,
): ResponseObject {
  const echo = who.echo;
  const response: ResponseObject = {
    id: who.id,
    object: 'response',
    created_at: who.createdAt,
    status,
    completed_at: status === 'completed' ? nowSeconds() : null,
    error,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: echo.instructions ?? null,
    max_output_tokens: echo.max_output_tokens ?? null,
    model: who.model,
    output,
    parallel_tool_calls: echo.parallel_tool_calls ?? true,
    previous_response_id: echo.previous_response_id ?? null,
    reasoning: null,
    // Only a response someone keeps may claim to be stored: the echo says so where that is true.
    store: echo.store ?? false,
    temperature: echo.temperature ?? 1,
    text: { format: { type: 'text' } },
    tool_choice: echo.tool_choice ?? 'auto',
    tools: echo.tools ?? [],
    top_p: echo.top_p ?? 1,
    truncation: 'disabled',
    metadata: echo.metadata ?? {},
  };
  if (usage !== null) response.usage = toResponsesUsage(usage);
  return response;
}
