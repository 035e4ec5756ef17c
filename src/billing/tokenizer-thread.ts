/**
 * The tokenizer's worker thread (started by `tokenizer.ts`): loads the encoder, says so, then answers
 * each job: a text's count, or what a large body or event says (parsed here, never on the main thread)
 * and the count of its output. Counts run in slices that yield every few ms, so several texts progress
 * together (a long prompt does not hold up a stream's short window for seconds) and a cancel arrives
 * between slices.
 */
import { parentPort } from 'node:worker_threads';
import type { LargeFacts } from '../protocols/large-json';
import { o200k } from './o200k';
import { runJob, type ThreadAnswer, type ThreadRequest } from './tokenizer-messages';

const port = parentPort;
if (port === null) throw new Error('tokenizer-thread runs as a worker thread');

// Loaded before the first message is read: the messages wait in the port meanwhile.
o200k();
port.postMessage({ kind: 'ready' } satisfies ThreadAnswer);

/** Jobs under way; an id leaves the set when it is answered or cancelled. */
const working = new Set<number>();
/** The first pieces of reads whose last pieces have not come yet, by id. */
const gathered = new Map<number, Uint8Array[]>();

port.on('message', (message: ThreadRequest) => {
  if (message.kind === 'cancel') {
    working.delete(message.id);
    gathered.delete(message.id);
    return;
  }
  if (message.kind === 'piece') {
    gathered.set(message.id, [...(gathered.get(message.id) ?? []), ...message.pieces]);
    return;
  }
  const { id } = message;
  const first = gathered.get(id);
  gathered.delete(id);
  const request = message.kind === 'read' && first !== undefined ? { ...message, pieces: [...first, ...message.pieces] } : message;
  working.add(id);
  const onFacts = (facts: LargeFacts) => working.has(id) && port.postMessage({ kind: 'facts', id, facts } satisfies ThreadAnswer);
  void runJob(request, () => !working.has(id), onFacts).then((result) => {
    if (!working.delete(id)) return;
    port.postMessage({ kind: 'done', id, ...result } satisfies ThreadAnswer);
  });
});
