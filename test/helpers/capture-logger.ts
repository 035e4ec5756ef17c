/** A logger built like `tollgate serve`'s (same redaction, LOG_LEVEL read) that writes its lines into an array. */
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger } from '../../src/gateway';

export function captureLogger(level: string, lines: string[]): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter((line) => line !== ''));
      done();
    },
  });
  const saved = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = level;
  try {
    return createLogger(sink);
  } finally {
    if (saved === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved;
  }
}
