/** The failover policy: which outcomes are worth another attempt, and how long to wait before it. */
import { expect } from 'chai';
import type { FailoverPolicy, ModelConfig } from '../../src/config/types';
import { backoffMs, effectivePolicy, isRetryable, type Outcome } from '../../src/routing/failover';

/** The shipped defaults (plugins/upstream/schema.json), with a round backoff for readable cases. */
const POLICY: FailoverPolicy = {
  max_attempts: 3,
  retry_on: ['connect_error', 'reset', 'timeout', 429, 500, 502, 503, 504, 529],
  backoff_base_ms: 100,
  backoff_max_ms: 1000,
  deadline_ms: 120_000,
};

describe('routing/failover', () => {
  describe('isRetryable', () => {
    const cases: ReadonlyArray<{ name: string; outcome: Outcome; retryOn?: FailoverPolicy['retry_on']; expected: boolean }> = [
      { name: 'a refused connection', outcome: { kind: 'connect_error' }, expected: true },
      { name: 'a reset connection', outcome: { kind: 'reset' }, expected: true },
      { name: 'a timeout', outcome: { kind: 'timeout' }, expected: true },
      { name: 'a transport failure the policy leaves out', outcome: { kind: 'timeout' }, retryOn: ['connect_error', 503], expected: false },
      { name: '429, the provider is busy', outcome: { kind: 'status', status: 429 }, expected: true },
      { name: '500', outcome: { kind: 'status', status: 500 }, expected: true },
      { name: '503', outcome: { kind: 'status', status: 503 }, expected: true },
      { name: "529, Anthropic's overloaded", outcome: { kind: 'status', status: 529 }, expected: true },
      { name: 'a 5xx the policy leaves out (501)', outcome: { kind: 'status', status: 501 }, expected: false },
      { name: '408 unless the operator lists it', outcome: { kind: 'status', status: 408 }, expected: false },
      { name: '408 when the operator lists it', outcome: { kind: 'status', status: 408 }, retryOn: [408], expected: true },
      { name: 'a garbled reply, as it would a 502', outcome: { kind: 'invalid' }, expected: true },
      { name: 'a garbled reply, 502 not listed', outcome: { kind: 'invalid' }, retryOn: ['connect_error', 503], expected: false },
      { name: 'a client that left', outcome: { kind: 'aborted' }, expected: false },
      // Another route would refuse the same request: never retried, even if a policy listed them (the
      // schema refuses such a list; isRetryable must not depend on that).
      ...[400, 401, 403, 404, 413, 422].map((status) => ({
        name: `client error ${status}, even when listed`,
        outcome: { kind: 'status', status } as const,
        retryOn: [status] as unknown as FailoverPolicy['retry_on'],
        expected: false,
      })),
    ];

    for (const { name, outcome, retryOn, expected } of cases) {
      it(`${expected ? 'retries' : 'does not retry'} ${name}`, () => {
        const policy = retryOn === undefined ? POLICY : { ...POLICY, retry_on: retryOn };
        expect(isRetryable(outcome, policy)).to.equal(expected);
      });
    }
  });

  describe('backoffMs', () => {
    // base 100, max 1000: the window before attempt n is 100 * 2^(n-2), capped at 1000.
    const cases: ReadonlyArray<{ name: string; next: number; random: number; retryAfterMs?: number | null; sameRoute?: boolean; expected: number }> = [
      { name: 'first retry, lowest draw', next: 2, random: 0, expected: 0 },
      { name: 'first retry, middle draw: half the base window', next: 2, random: 0.5, expected: 50 },
      { name: 'first retry, highest draw stays under the window', next: 2, random: 0.999, expected: 99.9 },
      { name: 'second retry: the window doubles', next: 3, random: 0.5, expected: 100 },
      { name: 'third retry: doubles again', next: 4, random: 0.5, expected: 200 },
      { name: 'late retry: the window is capped at backoff_max_ms', next: 10, random: 0.5, expected: 500 },
      { name: "the same route's retry-after when it is longer than the jitter", next: 2, random: 0.5, retryAfterMs: 700, sameRoute: true, expected: 700 },
      { name: 'the jitter when it is longer than the retry-after', next: 4, random: 0.5, retryAfterMs: 10, sameRoute: true, expected: 200 },
      { name: 'a retry-after past the cap waits only backoff_max_ms', next: 2, random: 0, retryAfterMs: 60_000, sameRoute: true, expected: 1000 },
      { name: "another route does not wait for the first route's retry-after", next: 2, random: 0.5, retryAfterMs: 700, sameRoute: false, expected: 50 },
      { name: 'no retry-after on the same route: jitter only', next: 2, random: 0.25, retryAfterMs: null, sameRoute: true, expected: 25 },
      { name: 'attempt numbers below 2 use the base window', next: 1, random: 0.5, expected: 50 },
    ];

    for (const { name, next, random, retryAfterMs = null, sameRoute = false, expected } of cases) {
      it(name, () => {
        expect(backoffMs(next, POLICY, retryAfterMs, sameRoute, () => random)).to.be.closeTo(expected, 1e-9);
      });
    }

    it('keeps every draw within [0, window) for each attempt number', () => {
      const windows: ReadonlyArray<{ next: number; window: number }> = [
        { next: 2, window: 100 },
        { next: 3, window: 200 },
        { next: 4, window: 400 },
        { next: 5, window: 800 },
        { next: 6, window: 1000 },
        { next: 12, window: 1000 },
      ];
      for (const { next, window } of windows) {
        for (let i = 0; i < 100; i++) {
          const delay = backoffMs(next, POLICY, null, false);
          expect(delay, `attempt ${next}`).to.be.at.least(0).and.below(window);
        }
      }
    });
  });

  describe('effectivePolicy', () => {
    const model = (failover?: Partial<FailoverPolicy>) => ({ id: 'm', ...(failover !== undefined && { failover }) }) as unknown as ModelConfig;

    it("is the plugin's defaults for a model without overrides", () => {
      expect(effectivePolicy(POLICY, model())).to.equal(POLICY);
    });

    it("takes the model's fields over the defaults and keeps the rest", () => {
      expect(effectivePolicy(POLICY, model({ max_attempts: 5, retry_on: [503] }))).to.deep.equal({ ...POLICY, max_attempts: 5, retry_on: [503] });
    });
  });
});
