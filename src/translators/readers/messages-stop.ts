/** Anthropic `stop_reason` in neutral words (docs/protocols.md#stop-reasons). */
import type { TurnStop } from '../../protocols/turn';

const STOPS: Readonly<Record<string, TurnStop>> = {
  end_turn: 'end',
  stop_sequence: 'stop_sequence',
  max_tokens: 'max_tokens',
  tool_use: 'tool_use',
  refusal: 'refusal',
  // A server-tool loop paused: the turn ended without being cut off, so it reads as a normal stop.
  pause_turn: 'end',
  // The context window, like max_tokens, cut the answer short.
  model_context_window_exceeded: 'max_tokens',
  compaction: 'max_tokens',
};

/** The neutral stop for an Anthropic stop reason; an unknown or missing one reads as a normal end. */
export function stopFromMessages(stopReason: unknown): TurnStop {
  return typeof stopReason === 'string' ? (STOPS[stopReason] ?? 'end') : 'end';
}
