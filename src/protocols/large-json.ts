/**
 * Reading a JSON body or stream event of many MiB (an image in base64) away from the event loop: it is
 * parsed where the tokenizer runs (its worker thread), and what the main thread needs back is small.
 * Usage, ids, types and the hosted-tool items a reply lists are read by the same code as for any other
 * body, from a skeleton: the parsed value with every long string emptied. No reader of usage looks at
 * a long string, so the skeleton gives the same answer as the whole body, at the cost of a few bytes.
 */
import { tryParse } from '../json';
import { eventTextOf, replyText } from './output-text';
import type { EndpointId } from './types';

/** Strings longer than this are emptied in a skeleton: ids, types and tiers are far shorter. */
const SKELETON_STRING_CHARS = 1024;

/** What is read from a large body or event: a stream event's data, or a whole reply. */
export type LargeRead = 'event' | 'reply';

/** What a large body or event says, small enough to post back to the main thread. */
export interface LargeFacts {
  /** The body as text, minus its long strings; null when it is not JSON (a garbled reply). */
  readonly skeleton: string | null;
  /** Whether the body mentions a usage object at all (a usage that does not parse is then unreadable). */
  readonly mentionsUsage: boolean;
}

/** `value` with every string longer than `SKELETON_STRING_CHARS` replaced by ''. */
function skeletonOf(value: unknown): unknown {
  if (typeof value === 'string') return value.length > SKELETON_STRING_CHARS ? '' : value;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(skeletonOf);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = skeletonOf(item);
  return out;
}

/** Whether `text` holds a usage object (as the stream taps ask). */
export function mentionsUsage(text: string): boolean {
  return text.includes('"usage":{') || text.includes('"usage": {');
}

/**
 * Parses `text` (a whole reply, or one event's data) once: its facts, and the output text billing counts
 * when the upstream reported no usage.
 */
export function readLarge(text: string, endpoint: EndpointId, as: LargeRead): { facts: LargeFacts; outputText: string } {
  const parsed = text === '[DONE]' ? null : tryParse(text);
  const facts = { skeleton: parsed === null ? null : JSON.stringify(skeletonOf(parsed)), mentionsUsage: mentionsUsage(text) };
  const outputText = parsed === null ? '' : as === 'event' ? eventTextOf(endpoint, parsed) : replyText(endpoint, parsed);
  return { facts, outputText };
}
