/**
 * Readers turn an upstream protocol's reply into the neutral turn: a whole reply into an
 * AssistantTurn, a stream event by event into calls on the client's TurnStreamWriter.
 */
import type { GatewayError } from '../../kernel/errors';
import type { SseEvent } from '../../protocols/sse';
import type { TurnStreamWriter } from '../../protocols/turn';
import type { Usage } from '../../protocols/types';

export interface ReplyStreamReader {
  /**
   * Reads one upstream SSE event and returns what the writer produced for it ('' for nothing).
   * Incremental: one upstream event never waits for the next, except where a protocol puts what the
   * client needs later (a chat stream's usage chunk arrives after its finish reason).
   */
  read(event: SseEvent, writer: TurnStreamWriter): string;
  /** True once the upstream's terminal event, or an in-stream error, has been read. */
  readonly ended: boolean;
  /** The error the upstream reported inside the stream, once read (the writer has failed the stream). */
  readonly upstreamError: GatewayError | null;
  /** Usage reported so far, cumulative; null while none has been reported. */
  usage(): Usage | null;
}
