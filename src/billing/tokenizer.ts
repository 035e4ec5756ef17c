/**
 * Token counts for what the upstream did not count: streams without usage, the output a broken or
 * abandoned stream produced before it ended, and the local count_tokens endpoint. The encoding is
 * o200k_base (`o200k.ts`): exact for OpenAI models and a close estimate for Claude, whose tokenizer is
 * not published; the usage record says `estimated` or `partial` either way.
 *
 * Counting is a fallback most processes seldom need, and the encoder costs ~58 MiB and a synchronous
 * load, so it lives in one worker thread, started by the first count (the main thread only posts the
 * text and waits) and ended after `TOKENIZER_IDLE_MS` without work; the next count starts another.
 * Money depends on these counts, so a count never fails because the worker did: the texts a dying
 * worker held go to a new one, and a text that outlives two workers, or a process whose workers die
 * before they load twice running, is counted in the main thread as before (with a process warning).
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { LargeFacts, LargeRead } from '../protocols/large-json';
import type { EndpointId } from '../protocols/types';
import { runJob, type JobResult, type ThreadAnswer, type ThreadRequest } from './tokenizer-messages';

/** How long the worker waits for work before it ends, giving its memory back. */
const TOKENIZER_IDLE_MS = 60_000;
/** How often a pending count asks whether its caller still wants the answer. */
const CANCEL_POLL_MS = 10;
/** How many bytes of a large read are copied to the worker in one turn of the event loop. */
const PIECES_PER_TURN_BYTES = 1024 * 1024;
/** Workers a text may see die under it before the main thread counts it. */
const WORKER_TRIES = 2;
/** Workers in a row that die before their encoder loaded, after which this process counts in its main thread. */
const FAILED_STARTS_TO_GIVE_UP = 2;

const NEVER = (): boolean => false;

/**
 * A job's work: a text to count (with `eventOf`, one stream event's data of this endpoint, whose
 * output text is what counts), or a large body or event to read, kept as the pieces it came in.
 */
type Work =
  | { readonly kind: 'count'; readonly text: string; readonly eventOf: EndpointId | null }
  | { readonly kind: 'read'; readonly pieces: readonly Buffer[]; readonly endpoint: EndpointId; readonly as: LargeRead; readonly count: boolean };

interface Job {
  readonly id: number;
  readonly work: Work;
  readonly cancelled: () => boolean;
  /** Workers that died while they held this job. */
  deaths: number;
  /** A read's facts, as soon as they are known (its count may come much later). */
  facts(facts: LargeFacts): void;
  settle(result: JobResult): void;
  fail(error: unknown): void;
}

/**
 * What a read of a large body or event gives: its facts, known once it is parsed, and its output's
 * tokens when asked (0 otherwise), which may take far longer (seconds for MiB of base64).
 */
export interface LargeReadResult {
  readonly facts: Promise<LargeFacts>;
  readonly tokens: Promise<number>;
}

/**
 * The message that carries `job` to a thread. A read's pieces go as they are: each is copied into the
 * worker's memory (the socket's chunks each have their own), so the main thread never allocates one
 * buffer of the whole body for it, and keeps the pieces in case a worker dies under the job.
 */
function requestOf(job: Job): Exclude<ThreadRequest, { kind: 'cancel' | 'piece' }> {
  const { work } = job;
  if (work.kind === 'count') return { kind: 'count', id: job.id, text: work.text, eventOf: work.eventOf };
  return { kind: 'read', id: job.id, pieces: work.pieces, endpoint: work.endpoint, as: work.as, count: work.count };
}

/** Runs `job` in this thread (workers cannot run, or died under it). */
function inThisThread(job: Job): Promise<JobResult> {
  return runJob(requestOf(job), job.cancelled, job.facts);
}

export interface TokenCounterOptions {
  /** How long the worker waits for work before it ends (`TOKENIZER_IDLE_MS`). */
  readonly idleMs?: number;
  /** The worker's script (tests give one that cannot start). */
  readonly script?: string;
}

/** Counts o200k_base tokens in a worker thread of its own; see the file's comment. */
export class TokenCounter {
  private readonly idleMs: number;
  private readonly script: string;
  private worker: Worker | null = null;
  /** Whether the current worker has loaded its encoder. */
  private loaded = false;
  private failedStarts = 0;
  private inMainThread = false;
  /** Texts posted to the current worker and not answered yet, by id. */
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Set by `stop` while counts are pending: the worker ends as soon as they are answered. */
  private stopWhenIdle = false;

  constructor(options: TokenCounterOptions = {}) {
    this.idleMs = options.idleMs ?? TOKENIZER_IDLE_MS;
    this.script = options.script ?? join(__dirname, 'tokenizer-thread.js');
  }

  /** The worker thread while one runs (tests watch it and end it). */
  get thread(): Worker | null {
    return this.worker;
  }

  /**
   * The number of tokens in `text`. `cancelled` is asked every few ms while the count is pending (a
   * client that left): the count then resolves to 0 at once and the worker drops the text.
   */
  count(text: string, cancelled: () => boolean = NEVER, eventOf: EndpointId | null = null): Promise<number> {
    if (text === '' || cancelled()) return Promise.resolve(0);
    return this.run({ kind: 'count', text, eventOf }, cancelled).then((result) => result.tokens);
  }

  /**
   * Reads a large body or event (`pieces`, in order) in the worker: what it says, and the tokens of its
   * output when `count` is set. A body that is not JSON reads as facts with a null skeleton.
   */
  read(pieces: readonly Buffer[], endpoint: EndpointId, as: LargeRead, count: boolean): LargeReadResult {
    let found: (facts: LargeFacts) => void = () => undefined;
    let lost: (error: unknown) => void = () => undefined;
    const facts = new Promise<LargeFacts>((resolve, reject) => ((found = resolve), (lost = reject)));
    // Posted in a turn of its own: copying MiB to the thread is not added to the turn that relayed them.
    const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.run({ kind: 'read', pieces, endpoint, as, count }, NEVER, found));
    // Facts come before the result; a job that fails before them fails both.
    done.then((result) => found(result.facts!), lost);
    // Whoever does not wait for the facts is told of a failure by the tokens.
    facts.catch(() => undefined);
    return { facts, tokens: done.then((result) => result.tokens) };
  }

  private run(work: Work, cancelled: () => boolean, facts: (facts: LargeFacts) => void = () => undefined): Promise<JobResult> {
    return new Promise<JobResult>((resolve, reject) => {
      let poll: NodeJS.Timeout | undefined;
      const job: Job = {
        id: this.nextId++,
        work,
        cancelled,
        deaths: 0,
        facts,
        settle: (result) => (clearInterval(poll), resolve(result)),
        fail: (error) => (clearInterval(poll), reject(error)),
      };
      if (this.inMainThread) return void inThisThread(job).then(job.settle, job.fail);
      if (cancelled !== NEVER) {
        poll = setInterval(() => cancelled() && this.cancel(job), CANCEL_POLL_MS);
        poll.unref();
      }
      this.post(job);
    });
  }

  /** Ends the worker: now when nothing is being counted, else once the pending counts are answered. */
  async stop(): Promise<void> {
    if (this.jobs.size > 0) {
      this.stopWhenIdle = true;
      return;
    }
    await this.retire();
  }

  private post(job: Job): void {
    const worker = this.worker ?? this.start();
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.jobs.set(job.id, job);
    // Held open while it owes answers, so a pending count always gets one; unref'd while idle.
    worker.ref();
    const request = requestOf(job);
    if (request.kind === 'read') void this.postPieces(worker, request);
    else worker.postMessage(request satisfies ThreadRequest);
  }

  /**
   * A read's pieces go over in batches of `PIECES_PER_TURN_BYTES`, a turn each, then the read itself:
   * copying MiB into the worker's memory never holds the event loop for long. A worker that dies
   * meanwhile gets no more: its jobs go to the next worker, from their first piece.
   */
  private async postPieces(worker: Worker, request: Extract<ThreadRequest, { kind: 'read' }>): Promise<void> {
    let batch: Uint8Array[] = [];
    let bytes = 0;
    for (const piece of request.pieces) {
      batch.push(piece);
      bytes += piece.byteLength;
      if (bytes < PIECES_PER_TURN_BYTES) continue;
      worker.postMessage({ kind: 'piece', id: request.id, pieces: batch } satisfies ThreadRequest);
      batch = [];
      bytes = 0;
      await new Promise((resolve) => setImmediate(resolve));
      if (worker !== this.worker || !this.jobs.has(request.id)) return;
    }
    worker.postMessage({ ...request, pieces: batch } satisfies ThreadRequest);
  }

  private start(): Worker {
    const worker = new Worker(this.script);
    this.worker = worker;
    this.loaded = false;
    worker.on('message', (answer: ThreadAnswer) => this.answered(worker, answer));
    // A failure to load, or an exception in the worker: 'exit' follows, and the texts go elsewhere there.
    worker.on('error', () => undefined);
    worker.once('exit', () => this.exited(worker));
    return worker;
  }

  private answered(worker: Worker, answer: ThreadAnswer): void {
    if (worker !== this.worker) return;
    if (answer.kind === 'ready') {
      this.loaded = true;
      this.failedStarts = 0;
      return;
    }
    if (answer.kind === 'facts') return this.jobs.get(answer.id)?.facts(answer.facts);
    const job = this.jobs.get(answer.id);
    // Cancelled meanwhile: already answered 0.
    if (job === undefined) return;
    this.jobs.delete(answer.id);
    job.settle(answer);
    this.idleIfDone(worker);
  }

  private cancel(job: Job): void {
    if (!this.jobs.delete(job.id)) return;
    this.worker?.postMessage({ kind: 'cancel', id: job.id } satisfies ThreadRequest);
    job.settle({ tokens: 0, facts: null });
    if (this.worker !== null) this.idleIfDone(this.worker);
  }

  private idleIfDone(worker: Worker): void {
    if (this.jobs.size > 0) return;
    worker.unref();
    if (this.stopWhenIdle) {
      void this.retire();
      return;
    }
    this.idleTimer = setTimeout(() => void this.retire(), this.idleMs);
    this.idleTimer.unref();
  }

  private async retire(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.stopWhenIdle = false;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    // Its 'exit' is then not a crash: `exited` ignores a worker that is no longer current.
    if (worker !== null) await worker.terminate();
  }

  /** The worker died unasked (crash, failed load, or ended from outside): its texts are counted elsewhere. */
  private exited(worker: Worker): void {
    if (worker !== this.worker) return;
    this.worker = null;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (!this.loaded) this.failedStarts += 1;
    if (this.failedStarts >= FAILED_STARTS_TO_GIVE_UP && !this.inMainThread) {
      this.inMainThread = true;
      process.emitWarning('the tokenizer worker thread could not start twice running; token counts now run in the main thread', 'TollgateWarning');
    }
    const orphans = [...this.jobs.values()];
    this.jobs.clear();
    for (const job of orphans) {
      job.deaths += 1;
      if (this.inMainThread || job.deaths >= WORKER_TRIES) inThisThread(job).then(job.settle, job.fail);
      else this.post(job);
    }
    if (this.stopWhenIdle && this.jobs.size === 0) this.stopWhenIdle = false;
  }
}

const shared = new TokenCounter();

/**
 * The number of o200k_base tokens in `text`, counted in the tokenizer's worker thread (texts of any
 * size: the main thread never blocks on it). `cancelled` is asked every few ms while it is pending (a
 * client that left): the count then resolves to 0 at once.
 */
export function countTokensAsync(text: string, cancelled?: () => boolean): Promise<number> {
  return shared.count(text, cancelled);
}

/**
 * The output tokens of one stream event of `endpoint` given as text (a translated stream's), its data
 * parsed in the worker thread, never on the main thread.
 */
export function countEventTokensAsync(endpoint: EndpointId, data: string): Promise<number> {
  return shared.count(data, NEVER, endpoint);
}

/**
 * Reads a large body or stream event of `endpoint` in the worker thread (`pieces`: its bytes as they
 * came): a body of many MiB is decoded and parsed there, never on the main thread. What comes back is
 * its facts (`large-json.ts`) and, when `count` is set, the tokens of its output text.
 */
export function readLargeAsync(pieces: readonly Buffer[], endpoint: EndpointId, as: LargeRead, count: boolean): LargeReadResult {
  return shared.read(pieces, endpoint, as, count);
}

/** The output tokens of a whole reply of `endpoint`, read and counted in the worker thread. */
export function countReplyTokensAsync(endpoint: EndpointId, body: Buffer): Promise<number> {
  return shared.read([body], endpoint, 'reply', true).tokens;
}

/** Ends the tokenizer's worker thread (the gateway's stop); a later count starts another. */
export function stopTokenizer(): Promise<void> {
  return shared.stop();
}
