/**
 * The load generators of the benchmarks: autocannon for plain requests, and a concurrent stream
 * client on undici that times the first content delta and the whole stream.
 */
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Pool } from 'undici';

/** One endpoint to drive: where, with which headers and body, and which stream protocol it answers in. */
export interface Target {
  readonly url: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly protocol: 'chat' | 'messages';
}

/** What one path collected over all its rounds. */
export class Tally {
  ok = 0;
  seconds = 0;
  readonly latency: number[] = [];
  readonly ttft: number[] = [];
  readonly errors = new Map<string, number>();

  fail(kind: string, count = 1): void {
    if (count > 0) this.errors.set(kind, (this.errors.get(kind) ?? 0) + count);
  }

  get errorCount(): number {
    let sum = 0;
    for (const count of this.errors.values()) sum += count;
    return sum;
  }
}

/** Drives plain requests with autocannon for `seconds`; latencies come from its per-response event (µs precision). */
export function plainRound(target: Target, connections: number, seconds: number, into: Tally): Promise<void> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const instance = autocannon(
      { url: target.url + target.path, method: 'POST', headers: target.headers, body: target.body, connections, duration: seconds },
      (err: Error | null, result: autocannon.Result) => {
        if (err) return reject(err);
        into.seconds += (performance.now() - start) / 1000;
        into.fail('connection error or timeout', result.errors);
        resolve();
      },
    );
    instance.on('response', (_client, status: number, _bytes: number, ms: number) => {
      if (status === 200) {
        into.ok++;
        into.latency.push(ms);
      } else {
        into.fail(`HTTP ${status}`);
      }
    });
  });
}

// The first chunk carrying text: a chat delta with non-empty content, or a Messages text_delta.
const CONTENT = { chat: /"content":"[^"]/, messages: /"text_delta"/ };
const END = { chat: 'data: [DONE]', messages: 'event: message_stop' };

export interface StreamOptions {
  /** Abort after the first content delta instead of reading to the end (leak check). */
  readonly abortAfterFirst?: boolean;
}

/**
 * Sends one streamed request and reads it, recording time to first content delta and total time.
 * Any non-200, a stream that ends without its closing event, or a socket error counts as an error.
 */
export async function oneStream(pool: Pool, target: Target, into: Tally, options: StreamOptions = {}): Promise<void> {
  const start = performance.now();
  let first = 0;
  let tail = '';
  try {
    const res = await pool.request({ method: 'POST', path: target.path, headers: target.headers, body: target.body });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return into.fail(`HTTP ${res.statusCode}`);
    }
    for await (const chunk of res.body) {
      const text = (chunk as Buffer).toString();
      if (first === 0 && CONTENT[target.protocol].test(text)) {
        first = performance.now() - start;
        // Leaving the loop destroys the body: undici drops the connection mid-stream, as a client that gives up does.
        if (options.abortAfterFirst === true) break;
      }
      tail = (tail + text).slice(-64);
    }
    if (first === 0) return into.fail('stream without a content delta');
    if (options.abortAfterFirst !== true && !tail.includes(END[target.protocol])) return into.fail(`stream cut before ${END[target.protocol]}`);
    into.ok++;
    into.ttft.push(first);
    into.latency.push(performance.now() - start);
  } catch (error) {
    into.fail(`stream error: ${(error as { code?: string }).code ?? (error as Error).message}`);
  }
}

/** Keeps `concurrency` streams open against `target` for `seconds`. */
export async function streamRound(pool: Pool, target: Target, concurrency: number, seconds: number, into: Tally): Promise<void> {
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) await oneStream(pool, target, into);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  into.seconds += (performance.now() - start) / 1000;
}

/** A pool to one target's origin, as many connections as streams. */
export function streamPool(target: Target, concurrency: number): Pool {
  return new Pool(target.url, { connections: concurrency, pipelining: 1, keepAliveTimeout: 30_000 });
}

/** The q-quantile of sorted values. */
export function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
