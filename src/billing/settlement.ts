/**
 * What a finished request owes, from how its exchange ended (see the billing issue, item 3):
 * - delivered with upstream usage: those counts (`upstream`);
 * - delivered without usage: the prompt and the relayed output counted with the tokenizer
 *   (`estimated`), never zero for a non-empty answer;
 * - cut short (client gone, upstream broken): what the upstream produced up to then (`partial`): its
 *   own counts where it gave them, the relayed output counted where it did not, never the error text;
 * - nothing produced (a refused request, an upstream error, a client gone before the first byte):
 *   nothing owed (`none`).
 */
import type { ExchangeOutcome } from '../kernel/context';
import { requestText } from '../protocols/request-text';
import type { UsageSourceRecord } from '../store/store';
import type { TokenCounts } from './prices';
import { countTokensAsync } from './tokenizer';

export interface BilledTokens {
  readonly tokens: TokenCounts;
  readonly source: UsageSourceRecord;
}

const NOTHING: BilledTokens = {
  tokens: { inputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0, outputTokens: 0 },
  source: 'none',
};

/**
 * The tokens a request is billed for; `body` is the client's parsed request. Asynchronous: a prompt of
 * megabytes is counted in slices that yield to the event loop (docs/limits.md).
 */
export async function billedTokens(outcome: ExchangeOutcome | null, body: Readonly<Record<string, unknown>>): Promise<BilledTokens> {
  if (outcome === null) return NOTHING;
  const { usage, end } = outcome;
  if (end.kind === 'delivered') {
    if (outcome.status >= 400) return NOTHING;
    if (usage !== null) return { tokens: usage, source: 'upstream' };
    return { tokens: estimated(await countTokensAsync(requestText(body)), await outcome.outputTokens()), source: 'estimated' };
  }
  const output = await outcome.outputTokens();
  if (usage === null && output === 0) return NOTHING;
  const input = usage ?? estimated(await countTokensAsync(requestText(body)), 0);
  return { tokens: { ...pick(input), outputTokens: Math.max(usage?.outputTokens ?? 0, output) }, source: 'partial' };
}

function estimated(input: number, output: number): TokenCounts {
  return { inputTokens: input, cacheWriteTokens: 0, cacheReadTokens: 0, outputTokens: output };
}

function pick(tokens: TokenCounts): TokenCounts {
  return {
    inputTokens: tokens.inputTokens,
    cacheWriteTokens: tokens.cacheWriteTokens,
    cacheReadTokens: tokens.cacheReadTokens,
    outputTokens: tokens.outputTokens,
  };
}
