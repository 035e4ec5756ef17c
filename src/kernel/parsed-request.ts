/**
 * The kernel's `request` slot, on its own so the wire and translator code that reads a request can
 * import it without the whole request state (which names their types in turn).
 */
import type { ModelConfig } from '../config/types';
import type { RequestReach } from '../protocols/request-reach';

/** The client's request once the kernel has read, checked and resolved it. */
export interface ParsedRequest {
  /** The body exactly as received. */
  readonly raw: Buffer;
  /** The body parsed once; plugins read it and never mutate it. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly model: ModelConfig;
  readonly stream: boolean;
  /** Byte span of the top-level `model` value in `raw`, for a rename without re-serialising. */
  readonly modelSpan: readonly [start: number, end: number];
  /** How far its bill can reach beyond the body (output limit, answers, referenced input): read once here, for rate limiting and billing. */
  readonly reach: RequestReach;
}
