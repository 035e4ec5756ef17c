/**
 * Reads an upstream event stream up to its first complete event, without sending anything on. The
 * first event decides whether the stream is an answer or an error in disguise (a 200 whose first
 * frame is an error): until then, failing over is still possible. The bytes read are kept to be
 * relayed first once the answer is committed.
 */
import type { Readable } from 'node:stream';
import { SseParser, type SseEvent } from '../protocols/sse';

export interface StreamHead {
  /** The chunks read so far, to relay before the rest. */
  readonly chunks: Buffer[];
  /** The first complete event, or null when the stream ended before one. */
  readonly first: SseEvent | null;
}

export function readFirstEvent(body: Readable): Promise<StreamHead> {
  return new Promise((resolve, reject) => {
    const parser = new SseParser();
    const chunks: Buffer[] = [];
    const finish = (first: SseEvent | null) => {
      body.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      body.pause();
      resolve({ chunks, first });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      let first: SseEvent | undefined;
      try {
        [first] = parser.push(chunk);
      } catch (error) {
        // A first event over the size cap: an invalid reply, not something to hold.
        body.destroy();
        return onError(error as Error);
      }
      if (first !== undefined) finish(first);
    };
    const onEnd = () => finish(null);
    const onError = (error: Error) => {
      body.off('data', onData).off('end', onEnd).off('close', onClose);
      reject(error);
    };
    const onClose = () => onError(new Error('upstream closed the stream before its first event'));
    body.on('data', onData).once('end', onEnd).once('error', onError).once('close', onClose);
  });
}

/** Whether an SSE event is an error report rather than the start of an answer, in any protocol. */
export function isErrorEvent(event: SseEvent): boolean {
  if (event.event === 'error' || event.event === 'response.failed') return true;
  // Chat streams carry no event names: an error is a data object with an `error` key.
  return event.event === null && /^\s*\{\s*"error"\s*:/.test(event.data);
}
