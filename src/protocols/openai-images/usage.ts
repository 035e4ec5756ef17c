/**
 * Usage of an Images API exchange (`POST /v1/images/generations`). A token-priced image model
 * (gpt-image-1) reports `usage` with `input_tokens_details` split into `text_tokens` and
 * `image_tokens`, and `output_tokens` that are image tokens (`output_tokens_details`, where present,
 * splits them into `image_tokens` and `text_tokens`). A per-image model (DALL·E) reports no usage:
 * what it bills is the images delivered, `data.length`, or one per `image_generation.completed` event.
 * The Responses API's `image_generation` tool reports the same shape under `tool_usage.image_gen`.
 */
import { object, tryParse, type Json } from '../../json';
import { count, field, readUsage } from '../usage-json';
import { NO_TOKENS, type UsageCounts } from '../types';

/** The stream event that carries one finished image and its usage. */
const COMPLETED_EVENT = 'image_generation.completed';
/** The stream event that carries one partial image: billed by the provider as image output of its own. */
const PARTIAL_EVENT = 'image_generation.partial_image';

/**
 * The text and image tokens of an image-generation usage object, as neutral counts. Input without its
 * details is taken as text (the prompt); output without its details is image tokens (the image). Throws
 * (for `readUsage`) on an unreadable count.
 */
export function imageTokenCounts(usage: Json): Pick<UsageCounts, 'inputTokens' | 'imageInputTokens' | 'outputTokens' | 'imageOutputTokens'> {
  const input = count(usage.input_tokens);
  const inputDetails = field(usage, 'input_tokens_details');
  const hasInputSplit = 'image_tokens' in inputDetails || 'text_tokens' in inputDetails;
  const imageInput = hasInputSplit ? Math.min(count(inputDetails.image_tokens), input) : 0;
  const output = count(usage.output_tokens);
  const outputDetails = field(usage, 'output_tokens_details');
  const hasOutputSplit = 'image_tokens' in outputDetails || 'text_tokens' in outputDetails;
  const textOutput = hasOutputSplit ? Math.min(count(outputDetails.text_tokens), output) : 0;
  return { inputTokens: input - imageInput, imageInputTokens: imageInput, outputTokens: textOutput, imageOutputTokens: output - textOutput };
}

function countsOf(usage: Json, images: number): UsageCounts {
  return { ...NO_TOKENS, ...imageTokenCounts(usage), images, toolCalls: {} };
}

/**
 * The usage of a whole Images reply: its token counts and the images it delivered. Tokens are zero
 * when it reported none (as a per-image model does) or none that could be read: the images are still
 * known, and billing estimates the tokens of a token-priced model from them. Null when the reply holds
 * no `data` list.
 */
export function imagesUsage(body: Json): UsageCounts | null {
  if (!Array.isArray(body.data)) return null;
  const images = body.data.length;
  return readUsage(() => countsOf(field(body, 'usage'), images)) ?? countsOf({}, images);
}

/** Whether a stream event is of `type`: by its SSE name, or by the type its data names when it has none. */
function isEvent(type: string, event: string | null, data: string): boolean {
  return event === type || (event === null && data.includes(`"${type}"`));
}

/**
 * Folds one stream event into the usage so far: each `image_generation.completed` event is one image,
 * its usage added; each `image_generation.partial_image` one partial image (the provider bills it, and a
 * stream cut before its image completed is charged for it); every other event leaves the counts as they
 * were. Null when a completed event's usage cannot be read.
 */
export function imagesUsageFromEvent(event: string | null, data: string, sofar: UsageCounts | null): UsageCounts | null {
  if (isEvent(PARTIAL_EVENT, event, data)) return { ...(sofar ?? countsOf({}, 0)), partialImages: (sofar?.partialImages ?? 0) + 1 };
  if (!isEvent(COMPLETED_EVENT, event, data)) return sofar;
  const usage = usageObjectIn(data);
  if (usage === undefined) return null;
  const counts = readUsage(() => countsOf(usage ?? {}, 1));
  if (counts === null) return null;
  return sofar === null ? counts : addCounts(sofar, counts);
}

function addCounts(a: UsageCounts, b: UsageCounts): UsageCounts {
  return {
    ...NO_TOKENS,
    inputTokens: a.inputTokens + b.inputTokens,
    imageInputTokens: a.imageInputTokens + b.imageInputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    imageOutputTokens: a.imageOutputTokens + b.imageOutputTokens,
    images: (a.images ?? 0) + (b.images ?? 0),
    partialImages: (a.partialImages ?? 0) + (b.partialImages ?? 0),
    toolCalls: {},
  };
}

/**
 * The `usage` object of one event's JSON, read without parsing the image beside it: base64 has no
 * quote, so `"usage"` cannot occur inside the image, and only the object after it is parsed. Null when
 * the event has no usage; undefined when it has one that cannot be read.
 */
function usageObjectIn(data: string): Json | null | undefined {
  const key = data.lastIndexOf('"usage"');
  if (key === -1) return null;
  const start = data.indexOf('{', key);
  if (start === -1) return undefined;
  const end = matchingBrace(data, start);
  if (end === -1) return undefined;
  const parsed = tryParse(data.slice(start, end + 1));
  return parsed === null ? undefined : object(parsed);
}

/** The index of the `}` closing the object opened at `start`, strings skipped; -1 when it never closes. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return i;
  }
  return -1;
}
