/**
 * The refusal recorder: queued off the request path, written in batches, and bounded per source and
 * window, so a flood of 401s from one address adds a fixed number of rows however long it lasts.
 */
import { expect } from 'chai';
import pino from 'pino';
import { RefusalRecorder, type Refusal, type RefusalLimits } from '../../src/http/refusal-recorder';
import type { RefusalRecord, RefusalStore } from '../../src/store/refusals';
import { SqliteStore } from '../../src/store/sqlite';

const LIMITS: RefusalLimits = { intervalMs: 60_000, windowMs: 60_000, perWindow: 3, maxSources: 2, maxQueued: 1000 };
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);

function refusal(n: number, extra: Partial<Refusal> = {}): Refusal {
  return {
    requestId: `req_${n}`,
    createdAt: new Date(T0 + n),
    accountId: null,
    keyId: null,
    memberAccountId: null,
    address: '198.51.100.7',
    model: null,
    endpoint: 'chat',
    status: 401,
    code: 'TOLLGATE_ERR_AUTH_INVALID_KEY',
    level: null,
    sessionId: null,
    ...extra,
  };
}

describe('http/refusal-recorder', () => {
  let store: SqliteStore;
  beforeEach(async () => {
    store = new SqliteStore(':memory:');
    await store.migrate();
  });
  afterEach(() => store.close());

  it('records the first refusals of a source one by one, then folds the rest into one counted row per code', async () => {
    const recorder = new RefusalRecorder(store.refusals, pino({ level: 'silent' }), LIMITS);
    for (let n = 0; n < 10_000; n += 1) recorder.record(refusal(n));
    recorder.record(refusal(20_000, { status: 429, code: 'TOLLGATE_ERR_AUTH_TOO_MANY_FAILURES' }));
    await recorder.flush();
    // A second flush of the same window adds to the folded row rather than writing another.
    for (let n = 10_000; n < 10_500; n += 1) recorder.record(refusal(n));
    await recorder.close();
    const rows = await store.refusals.list({ limit: 100 });
    expect(rows).to.have.length(5);
    expect(rows.filter((row) => row.id.startsWith('req_')).map((row) => row.id).sort()).to.deep.equal(['req_0', 'req_1', 'req_2']);
    const folded = rows.filter((row) => row.id.startsWith('rfx_'));
    expect(folded.map((row) => [row.status, row.count]).sort()).to.deep.equal([[401, 10_497], [429, 1]]);
    const [summary] = await store.refusals.summary({});
    expect(summary.requests).to.equal(10_500);
  });

  it('starts every window afresh, and folds sources past the window\'s limit into rows of no source', async () => {
    const recorder = new RefusalRecorder(store.refusals, pino({ level: 'silent' }), LIMITS);
    recorder.record(refusal(0, { address: 'a' }));
    recorder.record(refusal(1, { address: 'b' }));
    recorder.record(refusal(2, { address: 'c' }));
    recorder.record(refusal(3, { accountId: 'acc_1', keyId: 'key_1', address: null, status: 402, code: 'TOLLGATE_ERR_INSUFFICIENT_BALANCE' }));
    // The next minute: every source has its share again.
    recorder.record(refusal(60_000, { address: 'c' }));
    await recorder.close();
    const rows = await store.refusals.list({ limit: 100 });
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get('req_0')?.address).to.equal('a');
    expect(byId.get('req_1')?.address).to.equal('b');
    expect(byId.get('req_60000')?.address).to.equal('c');
    const overflow = rows.filter((row) => row.id.startsWith('rfx_'));
    expect(overflow.map((row) => [row.status, row.address, row.accountId, row.keyId, row.count]).sort()).to.deep.equal([
      [401, null, null, null, 1],
      [402, null, null, null, 1],
    ]);
    expect(rows).to.have.length(5);
  });

  it('keeps what the store refused and writes it on the next try, counts and all', async () => {
    const written: RefusalRecord[] = [];
    let failing = true;
    const flaky: RefusalStore = {
      record: async (rows) => {
        if (failing) throw new Error('store away');
        written.push(...rows);
      },
      list: async () => [],
      summary: async () => [],
    };
    const recorder = new RefusalRecorder(flaky, pino({ level: 'silent' }), LIMITS);
    for (let n = 0; n < 5; n += 1) recorder.record(refusal(n));
    await recorder.flush();
    expect(recorder.pending).to.equal(4);
    recorder.record(refusal(5));
    failing = false;
    await recorder.close();
    expect(written.filter((row) => row.count === 1 && row.id.startsWith('req_')).map((row) => row.id)).to.deep.equal(['req_0', 'req_1', 'req_2']);
    expect(written.filter((row) => row.id.startsWith('rfx_')).reduce((sum, row) => sum + row.count, 0)).to.equal(3);
  });
});
