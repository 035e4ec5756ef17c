/**
 * Chat fields whose meaning a Messages upstream cannot honour. Dropping any of them would hand the
 * client a different answer from the one it asked for, so each set to a meaningful value is a 400.
 * Fields that only tune delivery or bookkeeping (`seed`, `store`, `service_tier`, …) are simply not sent.
 */
import { isObject, type Json } from '../../json';
import { invalid, isSet } from '../to-messages/fields';

interface UnmappableField {
  readonly field: string;
  /** Whether the value asks for something the upstream cannot do. */
  readonly asksTooMuch: (value: unknown) => boolean;
  readonly reason: string;
}

const UNMAPPABLE_FIELDS: readonly UnmappableField[] = [
  { field: 'n', asksTooMuch: (n) => isSet(n) && n !== 1, reason: 'must be 1: this model returns one choice per request.' },
  { field: 'logprobs', asksTooMuch: (on) => on === true, reason: 'cannot be true: this model does not report token log probabilities.' },
  {
    field: 'top_logprobs',
    asksTooMuch: (count) => isSet(count) && count !== 0,
    reason: 'cannot be set: this model does not report token log probabilities.',
  },
  {
    field: 'logit_bias',
    asksTooMuch: (bias) => isSet(bias) && !(isObject(bias) && Object.keys(bias).length === 0),
    reason: 'cannot be set: this model takes no token biases.',
  },
  { field: 'audio', asksTooMuch: isSet, reason: 'cannot be set: this model does not produce audio.' },
  {
    field: 'modalities',
    asksTooMuch: (modalities) => Array.isArray(modalities) && modalities.includes('audio'),
    reason: "cannot include 'audio': this model does not produce audio.",
  },
  { field: 'functions', asksTooMuch: isSet, reason: 'is the legacy form of tools; declare each function in tools instead.' },
  { field: 'function_call', asksTooMuch: isSet, reason: 'is the legacy form of tool_choice; use tool_choice instead.' },
];

/** Throws the 400 for the first field the upstream cannot honour. */
export function rejectUnmappable(body: Readonly<Json>): void {
  for (const { field, asksTooMuch, reason } of UNMAPPABLE_FIELDS) {
    if (asksTooMuch(body[field])) throw invalid(field, reason);
  }
}
