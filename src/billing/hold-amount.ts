/**
 * The most a request can cost, held before it is forwarded (admission control, not a cap: the charge
 * is what the upstream reports). Input: one token per byte of the body (`inputTokensOf`: a bound for
 * text in any script), plus what the request references: the remembered size of replies and
 * conversations Tollgate relayed, the model's whole context window for anything of unknown size. All at the dearest input-side price, since a prompt may be all cache
 * writes. Output: the request's limit (never above the model's maximum; the maximum when it sets none)
 * times the answers it asks for. Tools: each per-call-priced server tool at its allowed calls.
 */
import type { ModelConfig } from '../config/types';
import { CALLS_SCALE, dearestInputPrice, TOKENS_PER_PRICE_UNIT, type NanoPrice } from './prices';
import type { RequestReach } from '../protocols/request-reach';
import { divideHalfUp } from './money';
import { GPT_IMAGE_OUTPUT_TOKENS } from '../config/derive';
import { heldPerImage, imageTokensPerImage, partialImageTokens, pricedPerImage } from './image-billing';
import { cardAt, tierRates, type ModelRates } from './service-levels';

/**
 * A bound on the input tokens of any text, whatever its script: the byte-level BPE tokenizers (o200k,
 * cl100k, Claude's) never make a token of less than one UTF-8 byte, and a JSON body's bytes are at
 * least its decoded text's (an escape only shrinks when decoded). No cheaper ratio is a bound: plain
 * ASCII such as "a1a1…" is one token per byte in o200k and cl100k, CJK Extension A 0.99, random
 * symbols 0.67 (docs/billing.md has the measurements). It costs no scan of the body at all.
 */
function inputTokensOf(rawBytes: number): number {
  return rawBytes;
}

export interface HoldEstimate {
  readonly amount: bigint;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly toolCalls: Readonly<Record<string, number>>;
  /** The images held for (an image request's `n`); absent for a text request. */
  readonly images?: number;
}

export interface HoldInputs {
  readonly rawBytes: number;
  readonly reach: RequestReach;
  /** Tokens of the referenced replies and conversations Tollgate remembers; null when one is unknown. */
  readonly referencedTokens: number | null;
  /** Calls held per tool when the request does not cap them. */
  readonly defaultToolUses: number;
}

export function holdAmount(inputs: HoldInputs, model: ModelConfig, price: NanoPrice): HoldEstimate {
  const { reach } = inputs;
  if (reach.image !== undefined) return imageHoldAmount(inputs, model, price);
  const window = model.context_window ?? Number.MAX_SAFE_INTEGER;
  const inputTokens =
    reach.unsizedInput || inputs.referencedTokens === null
      ? window
      : Math.min(window, inputTokensOf(inputs.rawBytes) + inputs.referencedTokens);
  const outputTokens = Math.min(reach.outputLimit ?? model.max_output_tokens, model.max_output_tokens) * reach.choices;
  const toolCalls: Record<string, number> = {};
  let sum = BigInt(inputTokens) * dearestInputPrice(price) + BigInt(outputTokens) * price.tokens.outputTokens;
  for (const [tool, allowed] of Object.entries(reach.toolCalls)) {
    const toolPrice = price.toolCalls[tool];
    const imageTokens = tool === IMAGE_TOOL ? price.tokens.imageOutputTokens : 0n;
    if (toolPrice === undefined && imageTokens === 0n) continue;
    toolCalls[tool] = allowed ?? inputs.defaultToolUses;
    sum += BigInt(toolCalls[tool]) * (toolPrice ?? 0n) * CALLS_SCALE;
    // Each image the tool makes bills its image tokens too: the largest image gpt-image-1 makes, and
    // the partial images a stream asks for before it.
    const perImage = imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, undefined) + partialImageTokens(reach.toolImage);
    sum += BigInt(toolCalls[tool]) * BigInt(perImage) * imageTokens;
  }
  return { amount: divideHalfUp(sum, TOKENS_PER_PRICE_UNIT), inputTokens, outputTokens, toolCalls };
}

/** The Responses tool that makes images, billed by its image tokens at the model's image prices. */
const IMAGE_TOOL = 'image_generation';

/**
 * An Images request: its prompt (one token per byte of the body, as for text) at the dearest text-input price, and
 * `n` images at the largest output the size and quality can reach, with the partial images a stream asks
 * for (`image-billing.ts`).
 */
function imageHoldAmount(inputs: HoldInputs, model: ModelConfig, price: NanoPrice): HoldEstimate {
  const { reach } = inputs;
  const images = reach.choices;
  const inputTokens = inputTokensOf(inputs.rawBytes);
  let sum = BigInt(inputTokens) * dearestInputPrice(price);
  let outputTokens = 0;
  if (pricedPerImage(price)) {
    sum += BigInt(images) * heldPerImage(price, reach.image, model.id) * TOKENS_PER_PRICE_UNIT;
  } else {
    // Each image streams its partial images first, each billed as image output of its own.
    outputTokens = images * (imageTokensPerImage(model.image_output_tokens, reach.image) + partialImageTokens(reach.image));
    sum += BigInt(outputTokens) * price.tokens.imageOutputTokens;
  }
  return { amount: divideHalfUp(sum, TOKENS_PER_PRICE_UNIT), inputTokens, outputTokens, toolCalls: {}, images };
}

/**
 * The hold at the dearest level the reply may report: each tier it may be served at (the standard
 * service among them), at that tier's long-context rates when the input held is above their threshold.
 */
export function dearestHold(inputs: HoldInputs, model: ModelConfig, rates: ModelRates, tiers: readonly (string | null)[]): HoldEstimate {
  let dearest: HoldEstimate | null = null;
  for (const tier of tiers) {
    const level = tierRates(rates, tier) ?? rates.standard;
    const atLevel = holdAmount(inputs, model, level.card);
    const { card, longContext } = cardAt(level, atLevel.inputTokens);
    const estimate = longContext ? holdAmount(inputs, model, card) : atLevel;
    if (dearest === null || estimate.amount > dearest.amount) dearest = estimate;
  }
  return dearest ?? holdAmount(inputs, model, rates.standard.card);
}

/** The output limit a translated request gets when it sets none, and the cap on one it sets. */
export function maxOutputTokens(reach: RequestReach, model: ModelConfig): number {
  return Math.min(reach.outputLimit ?? model.max_output_tokens, model.max_output_tokens);
}
