/**
 * The echo provider's tokenizer: a run of letters, digits and underscores is one token, and so is
 * every other non-space character. It is no real model's tokenizer; it only makes the demo's token
 * counts honest and reproducible.
 */

/** What one echo token looks like. */
const ECHO_TOKEN_PATTERN = /[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]/gu;

interface TokenSpan {
  readonly start: number;
  readonly end: number;
}

function tokenSpans(text: string): TokenSpan[] {
  const spans: TokenSpan[] = [];
  for (const match of text.matchAll(ECHO_TOKEN_PATTERN)) {
    const start = match.index ?? 0;
    spans.push({ start, end: start + match[0].length });
  }
  return spans;
}

/** The tokens of a text. */
export function echoTokens(text: string): string[] {
  return text.match(ECHO_TOKEN_PATTERN) ?? [];
}

/** How many echo tokens a text has. */
export function countEchoTokens(text: string): number {
  return tokenSpans(text).length;
}

/** The text up to the end of its `limit`-th token, original spacing kept; the whole text if shorter. */
export function cutToTokens(text: string, limit: number): string {
  const spans = tokenSpans(text);
  if (spans.length <= limit) return text;
  return limit <= 0 ? '' : text.slice(0, spans[limit - 1].end);
}

/**
 * Splits a text into one piece per token, each carrying the whitespace after it (the first also
 * whatever precedes it), so the pieces join back to the text and there are as many as tokens.
 */
export function tokenPieces(text: string): string[] {
  const spans = tokenSpans(text);
  return spans.map((span, i) => text.slice(i === 0 ? 0 : span.start, i + 1 < spans.length ? spans[i + 1].start : text.length));
}
