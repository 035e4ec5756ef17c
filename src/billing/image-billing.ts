/**
 * What an image request holds and is charged beyond its tokens. Per-image prices and the table of
 * output tokens per image are keyed `size/quality`; a request that names a size or a quality (not
 * `auto`) reaches the keys with that part, one that names neither reaches them all.
 * - The hold covers `n` images at the largest entry the request reaches: the dearest per-image price,
 *   or the most output tokens at the image-output price.
 * - A per-image model charges each image delivered at the key the request asked for; when it left a
 *   part open, at the first key listed that it reaches (gateway.yaml lists the provider's default first).
 * - A token-priced model whose reply reported no usage is charged each image at the largest table
 *   entry the request reaches (what was held for it), and the charge says `estimated`.
 * - Each partial image a stream delivers is billed by OpenAI as `PARTIAL_IMAGE_OUTPUT_TOKENS` image
 *   output tokens; a finished image's usage already counts its own partials.
 * - A Responses stream whose usage never came is charged each `image_generation` call it showed:
 *   its partial images, and its image at the one-image estimate of the tool's size and quality, in
 *   full when the image came, as a floor under its partial images when it did not (`partial`).
 * - A streamed generation the upstream ran (an image event came) but did not finish (fewer images
 *   completed than asked: the client left, or the upstream ended or broke) is charged at least what its
 *   hold estimated, the partial images delivered on top of what completed, and the charge says `partial`.
 */
import type { ModelConfig } from '../config/types';
import { GatewayError } from '../kernel/errors';
import type { ImageAsk } from '../protocols/request-reach';
import { requestText } from '../protocols/request-text';
import { TOKEN_KINDS, type ToolImageCall } from '../protocols/types';
import { GPT_IMAGE_OUTPUT_TOKENS } from '../config/derive';
import type { NanoPrice } from './prices';
import type { BilledTokens } from './settlement';
import { countTokensAsync } from './tokenizer';

const ANY: ImageAsk = { size: null, quality: null };

/** The image output tokens OpenAI bills for each partial image it streams (its image generation guide). */
const PARTIAL_IMAGE_OUTPUT_TOKENS = 100;

/** The image output tokens OpenAI bills for `count` partial images: the one place the figure is applied. */
function partialImagesOutput(count: number): number {
  return count * PARTIAL_IMAGE_OUTPUT_TOKENS;
}

/** The image output tokens of the partial images an ask streams before each image. */
export function partialImageTokens(ask: ImageAsk | undefined): number {
  return partialImagesOutput(ask?.partials ?? 0);
}

/**
 * A Responses stream whose usage never came (the client left, or the upstream ended or broke off before
 * `response.completed`), charged each `image_generation` call it showed, on top of the text counted,
 * and marked `partial`. One rule per call: the provider ran it, so it owes its partial images delivered
 * and its image at the one-image estimate for the tool's `ask` (the table entry `/v1/images` estimates
 * with); a call whose image never came owes that estimate only as a floor under its partial images.
 * Usage that came already counts every call: then, and without calls, `billed` as it is.
 */
export function unreportedToolImages(billed: BilledTokens, ask: ImageAsk | undefined): BilledTokens {
  const { tokens } = billed;
  // Before Object.values: every plain request passes here without image calls.
  if (tokens.imageCalls === undefined || billed.source === 'upstream') return billed;
  const calls = Object.values(tokens.imageCalls);
  if (calls.length === 0) return billed;
  const image = imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, ask);
  const owed = calls.reduce((sum, call) => sum + toolCallImageTokens(call, image), 0);
  return { source: 'partial', tokens: { ...tokens, imageOutputTokens: tokens.imageOutputTokens + owed } };
}

/** One tool call's image output tokens: its partial images, and its image (`image`) in full if it came, else as a floor. */
function toolCallImageTokens(call: ToolImageCall, image: number): number {
  const partials = partialImagesOutput(call.partials);
  return call.finished ? image + partials : Math.max(image, partials);
}

/** The keys of `table` an ask reaches, in their listed order. */
function reachable(keys: readonly string[], ask: ImageAsk): string[] {
  return keys.filter((key) => {
    const [size, quality] = key.split('/');
    return (ask.size === null || ask.size === size) && (ask.quality === null || ask.quality === quality);
  });
}

/**
 * The output tokens held (and, without usage, charged) for one image: the largest entry the ask
 * reaches, or the largest of the table when it reaches none (a size the table does not list: the
 * provider may still make it).
 */
export function imageTokensPerImage(table: Readonly<Record<string, number>>, ask: ImageAsk | undefined): number {
  const keys = reachable(Object.keys(table), ask ?? ANY);
  const from = keys.length > 0 ? keys : Object.keys(table);
  return from.reduce((most, key) => Math.max(most, table[key]), 0);
}

/** Whether `price` charges images one by one (a per-image model). */
export function pricedPerImage(price: NanoPrice): boolean {
  return Object.keys(price.perImage).length > 0;
}

/** The dearest per-image price an ask reaches; a 400 when it reaches none (the model has no price for it). */
export function heldPerImage(price: NanoPrice, ask: ImageAsk | undefined, modelId: string): bigint {
  const keys = reachable(Object.keys(price.perImage), ask ?? ANY);
  if (keys.length === 0) {
    const asked = `${ask?.size ?? 'any size'}/${ask?.quality ?? 'any quality'}`;
    throw new GatewayError(
      'TOLLGATE_ERR_REQUEST_INVALID',
      `The model '${modelId}' has no price for ${asked} images on this gateway; priced: ${Object.keys(price.perImage).join(', ')}.`,
      { param: ask?.size !== null && !Object.keys(price.perImage).some((key) => key.startsWith(`${ask?.size}/`)) ? 'size' : 'quality' },
    );
  }
  return keys.reduce((most, key) => (price.perImage[key] > most ? price.perImage[key] : most), 0n);
}

/** The per-image key an image of `ask` is charged at: the first listed key it reaches; null when none. */
function chargedImageKey(price: NanoPrice, ask: ImageAsk | undefined): string | null {
  return reachable(Object.keys(price.perImage), ask ?? ANY)[0] ?? null;
}

/** The per-image key the hold priced an image of `ask` at: the dearest it reaches (first listed of equals). */
function heldImageKey(price: NanoPrice, ask: ImageAsk | undefined): string | null {
  const keys = reachable(Object.keys(price.perImage), ask ?? ANY);
  return keys.reduce<string | null>((dearest, key) => (dearest === null || price.perImage[key] > price.perImage[dearest] ? key : dearest), null);
}

/** What an image request's hold estimated: its prompt's tokens, its images and their image output tokens. */
export interface ImageHold {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly images?: number;
}

/** A charge's counts with what its images add: the per-image key, or the estimated tokens of a reply without usage. */
export interface ImageBilled {
  readonly billed: BilledTokens;
  /** The per-image price key the images are charged at; null for a token-priced model. */
  readonly imageKey: string | null;
}

/**
 * The images of an Images reply, priced: a per-image model's at the key its request reaches; a
 * token-priced model's that reported no token usage (its images delivered, no tokens) at the table's
 * figure per image, its prompt counted by the tokenizer, and the charge marked `estimated`.
 */
export async function imageCharge(
  billed: BilledTokens,
  price: NanoPrice,
  model: Pick<ModelConfig, 'image_output_tokens'>,
  ask: ImageAsk | undefined,
  body: Readonly<Record<string, unknown>>,
  hold: ImageHold | null,
): Promise<ImageBilled> {
  if (unfinished(billed, body, hold?.images ?? 1)) return unfinishedCharge(billed, price, ask, hold);
  if (pricedPerImage(price)) return { billed, imageKey: chargedImageKey(price, ask) };
  const { tokens } = billed;
  const images = tokens.images ?? 0;
  const reportedNone = images > 0 && TOKEN_KINDS.every((kind) => tokens[kind] === 0);
  if (!reportedNone || billed.source === 'none') return { billed, imageKey: null };
  return {
    imageKey: null,
    billed: {
      source: 'estimated',
      tokens: {
        ...tokens,
        inputTokens: await countTokensAsync(requestText(body)),
        imageOutputTokens: images * imageTokensPerImage(model.image_output_tokens, ask),
      },
    },
  };
}

/**
 * Whether a streamed generation was run and not finished: an image event (a partial or a completed
 * image) came, and fewer images completed than the request asked for. A whole reply is finished as it
 * is: the images it returned are the ones made.
 */
function unfinished(billed: BilledTokens, body: Readonly<Record<string, unknown>>, asked: number): boolean {
  const { images = 0, partialImages = 0 } = billed.tokens;
  return body.stream === true && images + partialImages > 0 && images < asked;
}

/**
 * An unfinished generation's charge, marked `partial`: what it delivered (the completed images' usage,
 * and each partial image no completed image accounts for at `PARTIAL_IMAGE_OUTPUT_TOKENS`), and never
 * less than its hold estimated: the prompt at the hold's count, and every image asked for at the
 * largest output the request reaches (a per-image model: at the dearest price it reaches).
 */
function unfinishedCharge(billed: BilledTokens, price: NanoPrice, ask: ImageAsk | undefined, hold: ImageHold | null): ImageBilled {
  const { tokens } = billed;
  const images = tokens.images ?? 0;
  const unaccounted = Math.max(0, (tokens.partialImages ?? 0) - images * (ask?.partials ?? 0));
  const delivered = tokens.imageOutputTokens + partialImagesOutput(unaccounted);
  const perImage = pricedPerImage(price);
  return {
    imageKey: perImage ? heldImageKey(price, ask) : null,
    billed: {
      source: 'partial',
      tokens: {
        ...tokens,
        inputTokens: Math.max(tokens.inputTokens, hold?.inputTokens ?? 0),
        imageOutputTokens: perImage ? tokens.imageOutputTokens : Math.max(delivered, hold?.outputTokens ?? 0),
        // A per-image model is charged by the image: each one asked for, as held.
        images: perImage ? Math.max(images, hold?.images ?? 1) : images,
      },
    },
  };
}
