/**
 * What a finished request owes, from how its exchange ended (see the billing issue, item 3):
 * - delivered with readable upstream usage: those counts (`upstream`);
 * - delivered without usage, or with usage that cannot be read (strings, negative or fractional
 *   counts): the prompt and the relayed output counted with the tokenizer (`estimated`), never zero
 *   for a non-empty answer and never a credit;
 * - cut short (client gone, upstream broken): what the upstream produced up to then (`partial`): its
 *   own counts where it gave them, the relayed output counted where it did not, never the error text;
 * - nothing produced (a refused request, an upstream error, a client gone before the first byte):
 *   nothing owed (`none`).
 */
import type { ExchangeOutcome } from '../kernel/context';
import { requestText } from '../protocols/request-text';
import { NO_TOKENS, type UsageCounts } from '../protocols/types';
import { chatFramingTokens } from './chat-framing';
import type { UsageSourceRecord } from '../store/store';
import { countTokensAsync } from './tokenizer';

export interface BilledTokens {
  readonly tokens: UsageCounts;
  readonly source: UsageSourceRecord;
}

const NOTHING: BilledTokens = { tokens: { ...NO_TOKENS, toolCalls: {} }, source: 'none' };

/**
 * The tokens a request is billed for; `body` is the client's parsed request, `endpoint` where it came
 * in (an estimated chat input includes the messages' framing tokens, as OpenAI counts them).
 * Asynchronous: a prompt of megabytes is counted in slices that yield to the event loop (docs/limits.md).
 */
export async function billedTokens(
  outcome: ExchangeOutcome | null,
  body: Readonly<Record<string, unknown>>,
  endpoint?: string,
): Promise<BilledTokens> {
  const known = reportedTokens(outcome);
  if (known !== null || outcome === null) return known ?? NOTHING;
  const { end } = outcome;
  // Counts the upstream never reported (a Responses stream's image calls) are no usage: the tokens
  // are counted here, and the image calls kept for billing to charge.
  const usage = outcome.usage?.unreported === true ? null : outcome.usage;
  const shown = usage === null ? shownImageCalls(outcome.usage) : undefined;
  const inputEstimate = async (): Promise<number> => (await countTokensAsync(requestText(body))) + (endpoint === 'chat' ? chatFramingTokens(body) : 0);
  if (end.kind === 'delivered') return { tokens: estimated(await inputEstimate(), await outcome.outputTokens(), shown), source: 'estimated' };
  const output = await outcome.outputTokens();
  if (usage === null && output === 0 && shown === undefined) return NOTHING;
  const input = usage === null ? estimated(await inputEstimate(), 0, shown) : counts(usage);
  // Cut before any content: the upstream's early output count (Anthropic's message_start says 1) is a
  // placeholder, not output the client got, so only the input is billed.
  return { tokens: { ...input, outputTokens: output === 0 ? 0 : Math.max(usage?.outputTokens ?? 0, output) }, source: 'partial' };
}

/**
 * The tokens billed when nothing needs counting (no exchange, an error answer, a delivered reply with
 * readable usage: every plain paid request), else null. Synchronous, so settling such a request takes
 * no await of its own before the book (docs/benchmarks.md, issue 47's cuts).
 */
export function reportedTokens(outcome: ExchangeOutcome | null): BilledTokens | null {
  if (outcome === null) return NOTHING;
  if (outcome.end.kind !== 'delivered') return null;
  if (outcome.status >= 400) return NOTHING;
  const usage = outcome.usage?.unreported === true ? null : outcome.usage;
  return usage === null ? null : { tokens: counts(usage), source: 'upstream' };
}

/** The image calls (and their partial images) an unreported stream showed; undefined when none. */
function shownImageCalls(unreported: UsageCounts | null): Pick<UsageCounts, 'imageCalls' | 'partialImages'> | undefined {
  if (unreported?.imageCalls === undefined) return undefined;
  return { imageCalls: unreported.imageCalls, partialImages: unreported.partialImages ?? 0 };
}

function estimated(input: number, output: number, shown: Pick<UsageCounts, 'imageCalls' | 'partialImages'> | undefined): UsageCounts {
  const tokens: UsageCounts = { ...NO_TOKENS, inputTokens: input, outputTokens: output, toolCalls: {} };
  return shown === undefined ? tokens : { ...tokens, ...shown };
}

/** The counts alone, without the usage's source: field by field, cheaper than a rest pattern per charge. */
function counts(usage: UsageCounts): UsageCounts {
  return {
    inputTokens: usage.inputTokens,
    cacheWriteTokens: usage.cacheWriteTokens,
    cacheWrite1hTokens: usage.cacheWrite1hTokens,
    cacheReadTokens: usage.cacheReadTokens,
    outputTokens: usage.outputTokens,
    imageInputTokens: usage.imageInputTokens,
    imageOutputTokens: usage.imageOutputTokens,
    toolCalls: usage.toolCalls,
    // The images an Images reply delivered (undefined elsewhere): what per-image prices charge.
    images: usage.images,
    // The partial images a streamed one delivered: what an unfinished image generation is charged for.
    partialImages: usage.partialImages,
    // At the end of the literal: a spread there is cheap, where `{ ...tokens, servedTier }` is copied
    // on V8's slow path (docs/benchmarks.md, the CPU cuts), and every OpenAI reply names a tier.
    ...(usage.servedTier === undefined ? {} : { servedTier: usage.servedTier }),
  };
}
