/**
 * Where `tollgate serve` writes its log: readable lines (pino-pretty) when a person watches a terminal,
 * one JSON object per line otherwise (a file, a pipe, journald, a container's log driver), so
 * machines get JSON and people get text.
 */
import pino, { type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

export interface LogDestination {
  readonly stream: DestinationStream;
  /** Writes out whatever is still queued; called on exit. */
  flush(): void;
  /** Writes text for people (the first-run banner) after every log line written before it. */
  print(text: string): void;
}

export function logDestination(terminal: boolean = process.stdout.isTTY === true): LogDestination {
  if (terminal) {
    // Synchronous: a terminal is read as it is written, and the first-run banner must not interleave.
    const stream = pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', destination: 1, sync: true });
    return { stream, flush: () => undefined, print: (text) => process.stdout.write(text) };
  }
  // Log lines leave asynchronously, off the request path; whatever is queued is written on exit.
  const stream = pino.destination({ dest: 1, sync: false });
  // Through the lines' own queue: written to stdout beside it, text could overtake a line still queued
  // or in flight (the destination's flush callback does not wait for a write under way).
  return { stream, flush: () => stream.flushSync(), print: (text) => stream.write(text) };
}
