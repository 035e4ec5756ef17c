/**
 * The tokenizer's worker thread (started by `tokenizer.ts`): loads the encoder, says so, then answers
 * each text with its count. Counts run in slices that yield every few ms, so several texts progress
 * together (a long prompt does not hold up a stream's short window for seconds) and a cancel arrives
 * between slices.
 */
import { parentPort } from 'node:worker_threads';
import { countInThisThread, o200k } from './o200k';
import { textToCount, type ThreadAnswer, type ThreadRequest } from './tokenizer-messages';

const port = parentPort;
if (port === null) throw new Error('tokenizer-thread runs as a worker thread');

// Loaded before the first message is read: the messages wait in the port meanwhile.
o200k();
port.postMessage({ kind: 'ready' } satisfies ThreadAnswer);

/** Texts being counted; an id leaves the set when it is answered or cancelled. */
const counting = new Set<number>();

port.on('message', (request: ThreadRequest) => {
  if (request.kind === 'cancel') {
    counting.delete(request.id);
    return;
  }
  const { id, text, eventOf } = request;
  counting.add(id);
  void countInThisThread(textToCount(text, eventOf), () => !counting.has(id)).then((tokens) => {
    if (!counting.delete(id)) return;
    port.postMessage({ kind: 'count', id, tokens } satisfies ThreadAnswer);
  });
});
