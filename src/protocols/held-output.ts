/**
 * What a translated stream holds of its answer, and its bound. A writer passes each delta on as it
 * comes and keeps nothing of it, except where the client's protocol repeats it later: a Responses
 * stream's closing events (`output_text.done`, `output_item.done`, `response.completed`) carry every
 * item whole, and a chat stream sends a signed reasoning block whole again with its signature. The
 * reader of a Messages stream holds a search's input and a passage's sources until its block ends.
 * Those are held here, counted in characters, up to HELD_OUTPUT_CHARS: far above any model's
 * longest answer, and small enough that the closing events that repeat it (four copies, each
 * serialised) cost a few tens of MiB at most. Past it the stream cannot end as its protocol says,
 * so it ends with the protocol's error event (stream_interrupted), as an event over
 * `server.max_reply_bytes` does, billed for what it relayed (docs/limits.md).
 */
import { GatewayError } from '../kernel/errors';
import type { WebSource } from './turn';

/** 4 Mi characters: about a million tokens of text, eight times the longest answer a model gives. */
export const HELD_OUTPUT_CHARS = 4 * 1024 * 1024;

/** The characters held for one purpose of one stream. */
export class HeldOutput {
  private chars = 0;

  constructor(private readonly limit: number = HELD_OUTPUT_CHARS) {}

  /** Counts `chars` more, before they are kept; throws the stream's error when that would pass the bound. */
  hold(chars: number): void {
    if (this.chars + chars > this.limit) throw heldOutputTooLarge(this.limit);
    this.chars += chars;
  }

  /** What was held has been let go (a block ended). */
  release(): void {
    this.chars = 0;
  }
}

/** What one web page a search found or a passage cites costs when kept: its address and title, and room for the JSON around them. */
export function heldSourceChars(source: WebSource): number {
  return 256 + source.url.length + (source.title?.length ?? 0);
}

function heldOutputTooLarge(limit: number): GatewayError {
  return new GatewayError(
    'TOLLGATE_ERR_STREAM_INTERRUPTED',
    `The answer passed the ${limit / (1024 * 1024)} Mi characters the gateway holds to repeat at the end of a translated stream; it was cut short there.`,
  );
}
