/**
 * The circuit breaker per provider: when it opens, which failures count against a provider, when it
 * lets a probe through, and the states and counts it reports for metrics and the admin API. Waits are
 * for the breaker's own state to change (polled), with reset and window times kept short through the
 * breaker's own options; no assertion depends on how fast the machine is.
 */
import { expect } from 'chai';
import pino from 'pino';
import type { BreakerConfig } from '../../src/config/types';
import { GatewayError } from '../../src/kernel/errors';
import { AttemptFailure, type FailureKind } from '../../src/upstream/attempt';
import { BreakerOpenError, ProviderBreakers, type BreakerState } from '../../src/upstream/breakers';

const SILENT = pino({ level: 'silent' });

/** Opens at more than half failed, once 4 attempts are in the window; no probe during a test unless it asks. */
const CONFIG: BreakerConfig = { enabled: true, error_threshold_percent: 50, volume_threshold: 4, reset_timeout_ms: 60_000, rolling_window_ms: 10_000 };

function statusFailure(status: number): AttemptFailure {
  return new AttemptFailure('status', status, { status, headers: {}, body: Buffer.from('{}') });
}

function kindFailure(kind: Exclude<FailureKind, 'status'>): AttemptFailure {
  return new AttemptFailure(kind, null, new GatewayError('TOLLGATE_ERR_UPSTREAM_UNREACHABLE', 'unreachable'));
}

/** One attempt through the breaker: 'ok' resolves, an error rejects with it; what the caller saw comes back. */
function attempt(breakers: ProviderBreakers, provider: string, outcome: 'ok' | Error): Promise<unknown> {
  return breakers.run(provider, () => (outcome === 'ok' ? Promise.resolve('ok') : Promise.reject(outcome))).catch((error: unknown) => error);
}

async function attempts(breakers: ProviderBreakers, provider: string, outcomes: ReadonlyArray<'ok' | Error>): Promise<void> {
  for (const outcome of outcomes) await attempt(breakers, provider, outcome);
}

/** Resolves once `condition` holds; polls, so a slow machine only makes it take longer. */
async function eventually(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('upstream/ProviderBreakers', () => {
  const made: ProviderBreakers[] = [];
  function breakersWith(config: Partial<BreakerConfig> = {}): ProviderBreakers {
    const breakers = new ProviderBreakers({ ...CONFIG, ...config }, SILENT);
    made.push(breakers);
    return breakers;
  }
  afterEach(() => {
    for (const breakers of made.splice(0)) breakers.shutdown();
  });

  describe('opens on the share of failures once the window holds enough attempts', () => {
    const FAIL = statusFailure(503);
    const CLIENT = statusFailure(400);
    const cases: ReadonlyArray<{ name: string; outcomes: Array<'ok' | Error>; expected: BreakerState }> = [
      { name: 'three failures: fewer attempts than volume_threshold', outcomes: [FAIL, FAIL, FAIL], expected: 'closed' },
      { name: 'four failures of four', outcomes: [FAIL, FAIL, FAIL, FAIL], expected: 'open' },
      { name: 'three failures of four (75% > 50%)', outcomes: ['ok', FAIL, FAIL, FAIL], expected: 'open' },
      { name: 'two failures of four: 50% is not more than the threshold', outcomes: ['ok', FAIL, 'ok', FAIL], expected: 'closed' },
      { name: 'one failure of four', outcomes: [FAIL, 'ok', 'ok', 'ok'], expected: 'closed' },
      { name: 'client errors count as successes: two failures of four', outcomes: [FAIL, CLIENT, FAIL, CLIENT], expected: 'closed' },
      { name: 'client errors alone never open it', outcomes: [CLIENT, CLIENT, CLIENT, CLIENT, CLIENT, CLIENT], expected: 'closed' },
      { name: 'three provider failures with one client error (75%)', outcomes: [FAIL, CLIENT, FAIL, FAIL], expected: 'open' },
    ];

    for (const { name, outcomes, expected } of cases) {
      it(`${expected}: ${name}`, async () => {
        const breakers = breakersWith();
        await attempts(breakers, 'p', outcomes);
        expect(breakers.state('p')).to.equal(expected);
      });
    }

    it('honours another threshold and volume', async () => {
      const breakers = breakersWith({ error_threshold_percent: 10, volume_threshold: 10 });
      await attempts(breakers, 'p', ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', FAIL]);
      expect(breakers.state('p'), 'nine attempts are under the volume').to.equal('closed');
      await attempts(breakers, 'p', [FAIL]);
      expect(breakers.state('p'), '2 of 10 is over 10%').to.equal('open');
    });
  });

  describe('which failures count against a provider', () => {
    const cases: ReadonlyArray<{ name: string; error: Error; counts: boolean }> = [
      ...[400, 401, 403, 404, 413, 422].map((status) => ({ name: `client error ${status}`, error: statusFailure(status), counts: false })),
      { name: 'the client closing the request', error: kindFailure('aborted'), counts: false },
      { name: '408 request timeout', error: statusFailure(408), counts: true },
      { name: '429 overloaded', error: statusFailure(429), counts: true },
      ...[500, 502, 503, 504, 529].map((status) => ({ name: `server error ${status}`, error: statusFailure(status), counts: true })),
      { name: 'a timeout', error: kindFailure('timeout'), counts: true },
      { name: 'a refused connection', error: kindFailure('connect_error'), counts: true },
      { name: 'a reset connection', error: kindFailure('reset'), counts: true },
      { name: 'an invalid reply', error: kindFailure('invalid'), counts: true },
      { name: 'an error that is no attempt failure', error: new Error('unexpected'), counts: true },
    ];

    for (const { name, error, counts } of cases) {
      it(`${counts ? 'counts' : 'does not count'} ${name}`, async () => {
        const breakers = breakersWith();
        const seen = await attempt(breakers, 'p', error);
        expect(seen, 'the caller gets the error itself').to.equal(error);
        expect(breakers.health('p')).to.include({ attempts: 1, failures: counts ? 1 : 0 });
        await attempts(breakers, 'p', [error, error, error]);
        expect(breakers.state('p')).to.equal(counts ? 'open' : 'closed');
      });
    }

    it('counts a stream that broke after its commit, and not a client who left it', async () => {
      const breakers = breakersWith();
      for (let i = 0; i < 4; i++) breakers.recordFailure('left', kindFailure('aborted'));
      for (let i = 0; i < 4; i++) breakers.recordFailure('broke', kindFailure('reset'));
      await eventually(() => breakers.health('broke').failures === 4, 'the recorded failures are counted');
      expect(breakers.state('broke')).to.equal('open');
      expect(breakers.health('left')).to.include({ state: 'closed', failures: 0 });
    });
  });

  describe('while open', () => {
    it('refuses without running the attempt, saying when a probe will go through', async () => {
      const breakers = breakersWith();
      const before = Date.now();
      await attempts(breakers, 'p', Array(4).fill(statusFailure(503)));
      const after = Date.now();
      let ran = false;
      const error = await breakers.run('p', () => {
        ran = true;
        return Promise.resolve('ok');
      }).catch((e: unknown) => e);
      expect(ran).to.equal(false);
      expect(error).to.be.instanceOf(BreakerOpenError);
      const open = error as BreakerOpenError;
      expect(open.provider).to.equal('p');
      expect(open.halfOpenAt).to.be.within(before + CONFIG.reset_timeout_ms, after + CONFIG.reset_timeout_ms);
    });

    it("keeps one provider's breaker from another's", async () => {
      const breakers = breakersWith();
      await attempts(breakers, 'down', Array(4).fill(statusFailure(503)));
      expect(breakers.state('down')).to.equal('open');
      expect(breakers.state('up')).to.equal('closed');
      expect(await attempt(breakers, 'up', 'ok')).to.equal('ok');
    });
  });

  describe('half-open after reset_timeout_ms', () => {
    const RESET_MS = 50;

    async function openedBreaker(): Promise<{ breakers: ProviderBreakers; openedAt: number }> {
      const breakers = breakersWith({ reset_timeout_ms: RESET_MS });
      const openedAt = Date.now();
      await attempts(breakers, 'p', Array(4).fill(statusFailure(503)));
      // No timer can run between the failure that opened it and this line.
      expect(breakers.state('p')).to.equal('open');
      return { breakers, openedAt };
    }

    it('turns half-open no sooner than the reset time', async () => {
      const { breakers, openedAt } = await openedBreaker();
      await eventually(() => breakers.state('p') === 'half_open', 'the breaker is half-open');
      // Node may fire a timer a millisecond early by its own rounding.
      expect(Date.now() - openedAt).to.be.at.least(RESET_MS - 2);
    });

    it('lets exactly one probe through; its success closes the breaker', async () => {
      const { breakers } = await openedBreaker();
      await eventually(() => breakers.state('p') === 'half_open', 'the breaker is half-open');
      let finishProbe!: (value: string) => void;
      const probe = breakers.run('p', () => new Promise<string>((resolve) => (finishProbe = resolve)));
      expect(await attempt(breakers, 'p', 'ok'), 'a second call during the probe').to.be.instanceOf(BreakerOpenError);
      finishProbe('ok');
      expect(await probe).to.equal('ok');
      expect(breakers.state('p')).to.equal('closed');
    });

    it('opens again when the probe fails', async () => {
      const { breakers } = await openedBreaker();
      await eventually(() => breakers.state('p') === 'half_open', 'the breaker is half-open');
      await attempt(breakers, 'p', statusFailure(503));
      expect(breakers.state('p')).to.equal('open');
    });

    it('closes when the probe meets a client error: the provider answered', async () => {
      const { breakers } = await openedBreaker();
      await eventually(() => breakers.state('p') === 'half_open', 'the breaker is half-open');
      await attempt(breakers, 'p', statusFailure(400));
      expect(breakers.state('p')).to.equal('closed');
    });
  });

  describe('the rolling window', () => {
    it('forgets failures older than rolling_window_ms', async () => {
      const breakers = breakersWith({ rolling_window_ms: 200 });
      await attempts(breakers, 'p', Array(3).fill(statusFailure(503)));
      expect(breakers.health('p')).to.include({ attempts: 3, failures: 3 });
      await eventually(() => breakers.health('p').attempts === 0, 'the window has rolled past the failures');
      await attempts(breakers, 'p', [statusFailure(503)]);
      expect(breakers.state('p'), 'one failure in the window, under the volume').to.equal('closed');
    });
  });

  describe('health and state, as metrics and the admin API read them', () => {
    it('reports a provider never tried as closed with nothing counted', () => {
      expect(breakersWith().health('never')).to.deep.equal({ state: 'closed', windowMs: CONFIG.rolling_window_ms, attempts: 0, failures: 0 });
    });

    it('counts judged attempts and failures, not the calls refused while open', async () => {
      const breakers = breakersWith();
      await attempts(breakers, 'p', ['ok', statusFailure(404), statusFailure(503), statusFailure(503), statusFailure(503)]);
      expect(breakers.health('p')).to.deep.equal({ state: 'open', windowMs: CONFIG.rolling_window_ms, attempts: 5, failures: 3 });
      await attempts(breakers, 'p', ['ok', 'ok']);
      expect(breakers.health('p')).to.include({ attempts: 5, failures: 3 });
    });

    it('runs every attempt and reports closed when disabled', async () => {
      const breakers = breakersWith({ enabled: false });
      await attempts(breakers, 'p', Array(10).fill(statusFailure(503)));
      breakers.recordFailure('p', statusFailure(503));
      expect(await attempt(breakers, 'p', 'ok')).to.equal('ok');
      expect(breakers.health('p')).to.deep.equal({ state: 'closed', windowMs: CONFIG.rolling_window_ms, attempts: 0, failures: 0 });
    });
  });
});
