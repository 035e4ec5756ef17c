/** The request fields a Responses `response` object repeats back (docs/protocols.md#responses-reply). */

/** Request fields the response object repeats back (its schema requires most of them). */
export interface ResponsesRequestEcho {
  readonly instructions?: string | null;
  readonly tools?: readonly unknown[];
  readonly tool_choice?: unknown;
  readonly temperature?: number | null;
  readonly top_p?: number | null;
  readonly parallel_tool_calls?: boolean;
  readonly max_output_tokens?: number | null;
  readonly previous_response_id?: string | null;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly store?: boolean;
}

/** The JSON kinds each echoed field may have; a field of another kind is left out. */
const ECHO_FIELD_KINDS: Readonly<Record<keyof ResponsesRequestEcho, readonly string[]>> = {
  instructions: ['string'],
  tools: ['array'],
  tool_choice: ['string', 'object'],
  temperature: ['number'],
  top_p: ['number'],
  parallel_tool_calls: ['boolean'],
  max_output_tokens: ['number'],
  previous_response_id: ['string'],
  metadata: ['object'],
  store: ['boolean'],
};

function jsonKind(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/** Picks the echoed fields out of a parsed Responses request. */
export function responsesRequestEcho(body: Readonly<Record<string, unknown>>): ResponsesRequestEcho {
  const echo: Record<string, unknown> = {};
  for (const [key, kinds] of Object.entries(ECHO_FIELD_KINDS)) {
    if (kinds.includes(jsonKind(body[key]))) echo[key] = body[key];
  }
  return echo;
}
