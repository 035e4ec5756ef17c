/**
 * The tokens an OpenAI chat request costs beyond its text: each message is framed by a few special
 * tokens (role, start and end markers), a `name` adds one, and the reply is primed with three. OpenAI's
 * token-counting guide (the cookbook's "How to count tokens with tiktoken") gives 3 per message, +1 per
 * name, +3 for the reply, for the current chat models. Tollgate adds them when it must estimate the
 * input itself (a stream cut before usage), so the estimate is not biased low by ~7 tokens a request.
 */

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING_TOKENS = 3;

/** The framing tokens of a chat request's `messages`; 0 when it has none. */
export function chatFramingTokens(body: Readonly<Record<string, unknown>>): number {
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return 0;
  let tokens = REPLY_PRIMING_TOKENS;
  for (const message of messages as unknown[]) {
    tokens += TOKENS_PER_MESSAGE;
    const name = (message as { name?: unknown } | null)?.name;
    if (typeof name === 'string' && name !== '') tokens += TOKENS_PER_NAME;
  }
  return tokens;
}
