/** What the main thread and the tokenizer's worker thread say to each other, and the work itself. */
import { readLarge, type LargeFacts, type LargeRead } from '../protocols/large-json';
import { eventText } from '../protocols/output-text';
import type { EndpointId } from '../protocols/types';
import { countInThisThread } from './o200k';

/**
 * To the worker: count a text; read a large body or event (`read`: parse it there, send back its
 * facts, and count its output text when `count`), its first bytes possibly sent before it in `piece`
 * messages; or stop a job whose answer nobody waits for any more.
 */
export type ThreadRequest =
  | { readonly kind: 'count'; readonly id: number; readonly text: string; readonly eventOf: EndpointId | null }
  | { readonly kind: 'piece'; readonly id: number; readonly pieces: readonly Uint8Array[] }
  | { readonly kind: 'read'; readonly id: number; readonly pieces: readonly Uint8Array[]; readonly endpoint: EndpointId; readonly as: LargeRead; readonly count: boolean }
  | { readonly kind: 'cancel'; readonly id: number };

/** What a job answers: the tokens counted (0 when none were asked for), and what a read found. */
export interface JobResult {
  readonly tokens: number;
  readonly facts: LargeFacts | null;
}

/**
 * From the worker: the encoder is loaded; a read's facts, sent as soon as it is parsed (its count may
 * take much longer, and the stream waits for the facts, not for the count); or a job's result.
 */
export type ThreadAnswer =
  | { readonly kind: 'ready' }
  | { readonly kind: 'facts'; readonly id: number; readonly facts: LargeFacts }
  | ({ readonly kind: 'done'; readonly id: number } & JobResult);

/**
 * What a job counts: `text` itself, or, with `eventOf`, the output text of the stream event whose
 * data `text` is (read where it is counted, so a large event is never parsed on the main thread).
 */
function textToCount(text: string, eventOf: EndpointId | null): string {
  return eventOf === null ? text : eventText(eventOf, text);
}

/**
 * One job's work, in whichever thread runs it (the worker; the main thread only when workers cannot
 * run). A read hands its facts to `onFacts` as soon as it has them, before it counts.
 */
export async function runJob(request: Exclude<ThreadRequest, { kind: 'cancel' | 'piece' }>, cancelled: () => boolean, onFacts: (facts: LargeFacts) => void): Promise<JobResult> {
  if (request.kind === 'count') return { tokens: await countInThisThread(textToCount(request.text, request.eventOf), cancelled), facts: null };
  const bytes = Buffer.concat(request.pieces.map((piece) => Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength)));
  const { facts, outputText } = readLarge(bytes.toString('utf8'), request.endpoint, request.as);
  onFacts(facts);
  return { tokens: request.count ? await countInThisThread(outputText, cancelled) : 0, facts };
}
