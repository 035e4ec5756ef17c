/** The Anthropic status and error type that stand for a cloud platform's HTTP status (Bedrock, Vertex). */
export interface AnthropicErrorKind {
  readonly status: number;
  readonly type: string;
}

/** 503 becomes Anthropic's 529 overloaded_error, which clients and the failover policy know as "try later". */
export function anthropicErrorOfStatus(status: number): AnthropicErrorKind {
  if (status === 429) return { status, type: 'rate_limit_error' };
  if (status === 503) return { status: 529, type: 'overloaded_error' };
  if (status === 404) return { status, type: 'not_found_error' };
  return status >= 500 ? { status, type: 'api_error' } : { status, type: 'invalid_request_error' };
}
