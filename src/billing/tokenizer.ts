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
import { countInThisThread } from './o200k';
import type { EndpointId } from '../protocols/types';
import { textToCount, type ThreadAnswer, type ThreadRequest } from './tokenizer-messages';

/** How long the worker waits for work before it ends, giving its memory back. */
const TOKENIZER_IDLE_MS = 60_000;
/** How often a pending count asks whether its caller still wants the answer. */
const CANCEL_POLL_MS = 10;
/** Workers a text may see die under it before the main thread counts it. */
const WORKER_TRIES = 2;
/** Workers in a row that die before their encoder loaded, after which this process counts in its main thread. */
const FAILED_STARTS_TO_GIVE_UP = 2;

const NEVER = (): boolean => false;

interface Job {
  readonly id: number;
  readonly text: string;
  /** Set when `text` is one stream event's data of this endpoint, whose output text is what counts. */
  readonly eventOf: EndpointId | null;
  readonly cancelled: () => boolean;
  /** Workers that died while they held this text. */
  deaths: number;
  settle(tokens: number): void;
  fail(error: unknown): void;
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
    if (this.inMainThread) return countInThisThread(textToCount(text, eventOf), cancelled);
    return new Promise<number>((resolve, reject) => {
      let poll: NodeJS.Timeout | undefined;
      const job: Job = {
        id: this.nextId++,
        text,
        eventOf,
        cancelled,
        deaths: 0,
        settle: (tokens) => (clearInterval(poll), resolve(tokens)),
        fail: (error) => (clearInterval(poll), reject(error)),
      };
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
    worker.postMessage({ kind: 'count', id: job.id, text: job.text, eventOf: job.eventOf } satisfies ThreadRequest);
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
    const job = this.jobs.get(answer.id);
    // Cancelled meanwhile: already answered 0.
    if (job === undefined) return;
    this.jobs.delete(answer.id);
    job.settle(answer.tokens);
    this.idleIfDone(worker);
  }

  private cancel(job: Job): void {
    if (!this.jobs.delete(job.id)) return;
    this.worker?.postMessage({ kind: 'cancel', id: job.id } satisfies ThreadRequest);
    job.settle(0);
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
      if (this.inMainThread || job.deaths >= WORKER_TRIES) countInThisThread(textToCount(job.text, job.eventOf), job.cancelled).then(job.settle, job.fail);
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
 * The output tokens of one stream event of `endpoint`, its data read in the worker thread: an event of
 * many MiB is parsed there, never on the main thread.
 */
export function countEventTokensAsync(endpoint: EndpointId, data: string): Promise<number> {
  return shared.count(data, NEVER, endpoint);
}

/** Ends the tokenizer's worker thread (the gateway's stop); a later count starts another. */
export function stopTokenizer(): Promise<void> {
  return shared.stop();
}
