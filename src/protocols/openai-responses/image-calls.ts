/**
 * The calls of the Responses `image_generation` tool a stream shows before its usage comes: which the
 * upstream started, how many partial images each delivered, and which finished. The provider bills a
 * call it ran whether or not the response completes; a completed response's `tool_usage` counts them
 * all, and its usage replaces these counts (`responsesUsageFromEvent` comes first in the fold).
 */
import { object, tryParse } from '../../json';
import { field } from '../usage-json';
import { NO_TOKENS, type ToolImageCall, type UsageCounts } from '../types';

const CALL_EVENT_PREFIX = 'response.image_generation_call.';
const PARTIAL_IMAGE_EVENT = 'response.image_generation_call.partial_image';
const COMPLETED_EVENT = 'response.image_generation_call.completed';
const ITEM_EVENTS = new Set(['response.output_item.added', 'response.output_item.done']);
const CALL_ITEM = 'image_generation_call';

/** What one event says of a call: its id, and whether it is a partial image or the call's finish. */
interface CallStep {
  readonly id: string;
  readonly partial: boolean;
  readonly finished: boolean;
}

/**
 * Folds one event of an `image_generation` call into a stream's counts before its usage comes; null
 * for any other event, or once a usage report came.
 */
export function responsesImageCall(event: string | null, data: string, sofar: UsageCounts | null): UsageCounts | null {
  if (sofar !== null && sofar.unreported !== true) return null;
  const step = callStep(event, data);
  if (step === null) return null;
  const calls = sofar?.imageCalls ?? {};
  const before: ToolImageCall = calls[step.id] ?? { partials: 0, finished: false };
  const call: ToolImageCall = { partials: before.partials + (step.partial ? 1 : 0), finished: before.finished || step.finished };
  return {
    ...NO_TOKENS,
    toolCalls: {},
    partialImages: (sofar?.partialImages ?? 0) + (step.partial ? 1 : 0),
    imageCalls: { ...calls, [step.id]: call },
    unreported: true,
  };
}

/** The call an event is about; null when it is about none. Only events that can be one are parsed. */
function callStep(event: string | null, data: string): CallStep | null {
  const named = event !== null && (event.startsWith(CALL_EVENT_PREFIX) || ITEM_EVENTS.has(event));
  if ((event !== null && !named) || !data.includes(CALL_ITEM)) return null;
  const parsed = object(tryParse(data));
  const type = typeof parsed.type === 'string' ? parsed.type : event;
  if (type === null) return null;
  if (type.startsWith(CALL_EVENT_PREFIX)) {
    const id = typeof parsed.item_id === 'string' ? parsed.item_id : '';
    return { id, partial: type === PARTIAL_IMAGE_EVENT, finished: type === COMPLETED_EVENT };
  }
  if (!ITEM_EVENTS.has(type)) return null;
  const item = field(parsed, 'item');
  if (item.type !== CALL_ITEM) return null;
  const id = typeof item.id === 'string' ? item.id : '';
  // A large event's skeleton empties the image, but keeps its `result` key.
  const finished = type === 'response.output_item.done' && (item.status === 'completed' || typeof item.result === 'string');
  return { id, partial: false, finished };
}
