/**
 * What can go wrong before an answer is committed, in the failover policy's words: transport errors
 * and aborts as failure kinds, a provider's retry-after, an error event that opens a stream, and the
 * states a stream can be in before its first event. Each case also says whether the default policy
 * retries it, which is what the classification is for.
 */
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import type { FailoverPolicy } from '../../src/config/types';
import { GatewayError } from '../../src/kernel/errors';
import { SseParser } from '../../src/protocols/sse';
import { isRetryable, type Outcome } from '../../src/routing/failover';
import { AttemptFailure, retryAfterMs, type FailureKind } from '../../src/upstream/attempt';
import { ABORTED_BY_CLIENT, ABORTED_BY_DEADLINE, attemptFailure } from '../../src/upstream/failures';
import { readFirstEvent } from '../../src/upstream/first-event';
import { failureFromErrorEvent } from '../../src/upstream/stream-error';

const DEFAULT_POLICY: FailoverPolicy = {
  max_attempts: 3,
  retry_on: ['connect_error', 'reset', 'timeout', 429, 500, 502, 503, 504, 529],
  backoff_base_ms: 50,
  backoff_max_ms: 2000,
  deadline_ms: 120_000,
};

function retried(failure: AttemptFailure): boolean {
  const outcome: Outcome = failure.kind === 'status' ? { kind: 'status', status: failure.status ?? 502 } : { kind: failure.kind };
  return isRetryable(outcome, DEFAULT_POLICY);
}

function coded(code: string, message = `connect ${code} 10.0.0.1:443 (https://secret.example.com/v1?key=sk-secret)`): Error {
  return Object.assign(new Error(message), { code });
}

function aborted(reason: string): AbortSignal {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
}

const LIVE = new AbortController().signal;

describe('upstream/failures', () => {
  describe('attemptFailure: what an attempt threw, as a failure kind', () => {
    const passedThrough = new AttemptFailure('status', 503, { status: 503, headers: {}, body: Buffer.from('{}') });
    const cases: ReadonlyArray<{ name: string; thrown: unknown; signal?: AbortSignal; expected: { kind: FailureKind; clientStatus: number; retried: boolean } }> = [
      { name: 'an attempt failure is kept as it is', thrown: passedThrough, expected: { kind: 'status', clientStatus: 503, retried: true } },
      { name: 'the deadline aborted the attempt', thrown: new Error('This operation was aborted'), signal: aborted(ABORTED_BY_DEADLINE), expected: { kind: 'timeout', clientStatus: 504, retried: true } },
      { name: 'the client left', thrown: new Error('This operation was aborted'), signal: aborted(ABORTED_BY_CLIENT), expected: { kind: 'aborted', clientStatus: 500, retried: false } },
      { name: 'the client left while the socket also failed', thrown: coded('ECONNRESET'), signal: aborted(ABORTED_BY_CLIENT), expected: { kind: 'aborted', clientStatus: 500, retried: false } },
      { name: 'a request the protocol cannot carry', thrown: new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', 'bad'), expected: { kind: 'invalid', clientStatus: 502, retried: true } },
      { name: 'no response headers in time', thrown: coded('UND_ERR_HEADERS_TIMEOUT'), expected: { kind: 'timeout', clientStatus: 504, retried: true } },
      { name: 'a body that stalled', thrown: coded('UND_ERR_BODY_TIMEOUT'), expected: { kind: 'timeout', clientStatus: 504, retried: true } },
      ...['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'].map((code) => ({
        name: `${code} is a connect error`,
        thrown: coded(code),
        expected: { kind: 'connect_error' as const, clientStatus: 502, retried: true },
      })),
      {
        name: "a fetch error whose cause holds the code",
        thrown: new TypeError('fetch failed', { cause: coded('ECONNREFUSED') }),
        expected: { kind: 'connect_error', clientStatus: 502, retried: true },
      },
      { name: 'a reset socket', thrown: coded('ECONNRESET'), expected: { kind: 'reset', clientStatus: 502, retried: true } },
      { name: 'a socket closed by the other side', thrown: coded('UND_ERR_SOCKET'), expected: { kind: 'reset', clientStatus: 502, retried: true } },
      { name: 'an error without a code', thrown: new Error('other side closed'), expected: { kind: 'reset', clientStatus: 502, retried: true } },
      { name: 'a thrown non-error', thrown: 'boom', expected: { kind: 'reset', clientStatus: 502, retried: true } },
    ];

    for (const { name, thrown, signal = LIVE, expected } of cases) {
      it(`${name}: ${expected.kind}, ${expected.retried ? 'retried' : 'not retried'}`, () => {
        const failure = attemptFailure(thrown, 'acme', signal);
        expect({ kind: failure.kind, clientStatus: failure.clientStatus, retried: retried(failure) }).to.deep.equal(expected);
        if (thrown === passedThrough) expect(failure).to.equal(passedThrough);
      });
    }

    it("never carries the provider's URL, host or key into the message", () => {
      for (const code of ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_HEADERS_TIMEOUT']) {
        const message = attemptFailure(coded(code), 'acme', LIVE).message;
        expect(message).to.include("'acme'").and.not.match(/secret|10\.0\.0\.1/);
      }
    });
  });

  describe('AttemptFailure.countsAgainstProvider', () => {
    const answer = new GatewayError('TOLLGATE_ERR_UPSTREAM_UNREACHABLE', 'x');
    const cases: ReadonlyArray<{ name: string; failure: AttemptFailure; expected: boolean }> = [
      { name: 'a transport failure', failure: new AttemptFailure('reset', null, answer), expected: true },
      { name: 'an invalid reply', failure: new AttemptFailure('invalid', null, answer), expected: true },
      { name: 'a client that left', failure: new AttemptFailure('aborted', null, answer), expected: false },
      { name: 'a 400', failure: new AttemptFailure('status', 400, answer), expected: false },
      { name: 'a 404', failure: new AttemptFailure('status', 404, answer), expected: false },
      { name: 'a 408', failure: new AttemptFailure('status', 408, answer), expected: true },
      { name: 'a 429', failure: new AttemptFailure('status', 429, answer), expected: true },
      { name: 'a 499 is still the client', failure: new AttemptFailure('status', 499, answer), expected: false },
      { name: 'a 500', failure: new AttemptFailure('status', 500, answer), expected: true },
      { name: 'a status failure without a status', failure: new AttemptFailure('status', null, answer), expected: true },
    ];

    for (const { name, failure, expected } of cases) {
      it(`${name}: ${expected ? 'counts' : 'does not count'}`, () => {
        expect(failure.countsAgainstProvider).to.equal(expected);
      });
    }
  });

  describe('retryAfterMs', () => {
    type Headers = Record<string, string | string[] | undefined>;
    // Made when its case runs, not when the file loads: a long suite reaches it well after loading.
    const inTenSeconds = (): Headers => ({ 'retry-after': new Date(Date.now() + 10_000).toUTCString() });
    const cases: ReadonlyArray<{ name: string; headers: Headers | (() => Headers); expected: number | null | [number, number] }> = [
      { name: 'none sent', headers: {}, expected: null },
      { name: 'seconds', headers: { 'retry-after': '2' }, expected: 2000 },
      { name: 'fractional seconds', headers: { 'retry-after': '0.5' }, expected: 500 },
      { name: 'retry-after-ms', headers: { 'retry-after-ms': '250' }, expected: 250 },
      { name: 'retry-after-ms wins over retry-after', headers: { 'retry-after-ms': '250', 'retry-after': '9' }, expected: 250 },
      { name: 'an unreadable retry-after-ms falls back to retry-after', headers: { 'retry-after-ms': 'soon', 'retry-after': '3' }, expected: 3000 },
      { name: 'an HTTP date, as the time left until it (wide bounds)', headers: inTenSeconds, expected: [1000, 10_000] },
      { name: 'an HTTP date in the past', headers: { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }, expected: 0 },
      { name: 'an unreadable value', headers: { 'retry-after': 'later, please' }, expected: null },
      { name: 'a repeated header', headers: { 'retry-after': ['1', '2'] }, expected: null },
    ];

    for (const { name, headers, expected } of cases) {
      it(name, () => {
        const ms = retryAfterMs(typeof headers === 'function' ? headers() : headers);
        if (Array.isArray(expected)) expect(ms).to.be.within(expected[0], expected[1]);
        else expect(ms).to.equal(expected);
      });
    }
  });

  describe('failureFromErrorEvent: a stream whose first event is an error', () => {
    const cases: ReadonlyArray<{ name: string; data: string; expected: { status: number; retried: boolean } }> = [
      { name: 'Anthropic overloaded_error', data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', expected: { status: 529, retried: true } },
      { name: 'Anthropic rate_limit_error', data: '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}', expected: { status: 429, retried: true } },
      { name: 'Anthropic api_error', data: '{"type":"error","error":{"type":"api_error","message":"oops"}}', expected: { status: 500, retried: true } },
      { name: 'Anthropic invalid_request_error', data: '{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}', expected: { status: 400, retried: false } },
      { name: 'Anthropic not_found_error', data: '{"type":"error","error":{"type":"not_found_error","message":"no model"}}', expected: { status: 404, retried: false } },
      { name: 'a chat error with a numeric code', data: '{"error":{"message":"busy","type":"server_error","code":503}}', expected: { status: 503, retried: true } },
      { name: 'a Responses response.failed with its error', data: '{"type":"response.failed","response":{"error":{"type":"rate_limit_error","message":"x"}}}', expected: { status: 429, retried: true } },
      { name: 'an error of no known type', data: '{"error":{"message":"?","type":"weird","code":"x"}}', expected: { status: 502, retried: true } },
      { name: 'a code that is no HTTP error status', data: '{"error":{"message":"?","code":200}}', expected: { status: 502, retried: true } },
      { name: 'data that is not JSON', data: 'not json', expected: { status: 502, retried: true } },
    ];

    for (const { name, data, expected } of cases) {
      it(`${name}: ${expected.status}, ${expected.retried ? 'retried' : 'not retried'}`, () => {
        const failure = failureFromErrorEvent({ event: 'error', data });
        expect({ status: failure.status, retried: retried(failure) }).to.deep.equal(expected);
        expect(failure.kind).to.equal('status');
      });
    }
  });

  describe('readFirstEvent: the states of a stream before its first event', () => {
    const cases: ReadonlyArray<{
      name: string;
      feed: (body: PassThrough) => void;
      expected: { first: string | null; chunks: number } | { rejects: RegExp };
    }> = [
      {
        name: 'a first event in one chunk',
        feed: (body) => body.write('event: message_start\ndata: {"a":1}\n\n'),
        expected: { first: '{"a":1}', chunks: 1 },
      },
      {
        name: 'a first event split over chunks keeps every chunk to relay',
        feed: (body) => ['event: message_st', 'art\ndata: {"a"', ':1}\n\n'].forEach((chunk) => body.write(chunk)),
        expected: { first: '{"a":1}', chunks: 3 },
      },
      {
        name: 'a stream that ends before any event',
        feed: (body) => body.end(': keep-alive\n\n'),
        expected: { first: null, chunks: 1 },
      },
      {
        name: 'a stream that fails before its first event',
        feed: (body) => body.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })),
        expected: { rejects: /socket hang up/ },
      },
      {
        name: 'a stream closed before its first event',
        feed: (body) => {
          body.write('data: {"part');
          body.destroy();
        },
        expected: { rejects: /closed the stream before its first event/ },
      },
    ];

    for (const { name, feed, expected } of cases) {
      it(name, async () => {
        const body = new PassThrough();
        const head = readFirstEvent(body, new SseParser());
        feed(body);
        if ('rejects' in expected) {
          const error = await head.then(
            () => null,
            (e: unknown) => e as Error,
          );
          expect(error?.message).to.match(expected.rejects);
          return;
        }
        const { first, chunks } = await head;
        expect({ first: first?.data ?? null, chunks: chunks.length }).to.deep.equal(expected);
      });
    }

    it('reads nothing past the first event: the rest waits for the commit', async () => {
      const body = new PassThrough();
      const head = readFirstEvent(body, new SseParser());
      body.write('data: {"first":true}\n\n');
      const { first } = await head;
      body.write('data: {"second":true}\n\n');
      expect(first?.data).to.equal('{"first":true}');
      expect(body.isPaused()).to.equal(true);
      expect(String(body.read())).to.equal('data: {"second":true}\n\n');
    });
  });
});
