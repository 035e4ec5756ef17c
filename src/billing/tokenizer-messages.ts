/** What the main thread and the tokenizer's worker thread say to each other. */
import { eventText } from '../protocols/output-text';
import type { EndpointId } from '../protocols/types';

/** To the worker: count a text, or stop counting one whose answer nobody waits for any more. */
export type ThreadRequest =
  | { readonly kind: 'count'; readonly id: number; readonly text: string; readonly eventOf: EndpointId | null }
  | { readonly kind: 'cancel'; readonly id: number };

/**
 * What a job counts: `text` itself, or, with `eventOf`, the output text of the stream event whose
 * data `text` is (read where it is counted, so a large event is never parsed on the main thread).
 */
export function textToCount(text: string, eventOf: EndpointId | null): string {
  return eventOf === null ? text : eventText(eventOf, text);
}

/** From the worker: the encoder is loaded, or a text's count. */
export type ThreadAnswer = { readonly kind: 'ready' } | { readonly kind: 'count'; readonly id: number; readonly tokens: number };
