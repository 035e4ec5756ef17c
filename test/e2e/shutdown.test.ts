/**
 * Graceful shutdown: stopping the gateway while 20 streams are under way lets every one of them finish
 * (within the grace period), refuses new connections meanwhile, and records every charge.
 */
import { expect } from 'chai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicStream } from '../helpers/upstream-replies';

describe('e2e: graceful shutdown', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
  });

  after(async () => {
    await fake?.close();
    await tg?.store.close();
  });

  it('lets 20 in-flight streams complete, then stops', async () => {
    for (let i = 0; i < 20; i++) {
      const events = anthropicStream({ text: `stream number ${i} keeps going` }).events;
      fake.enqueue({ status: 200, events: [...events.slice(0, 3), { pauseMs: 400 }, ...events.slice(3)] });
    }
    const streams = Array.from({ length: 20 }, async () => {
      const res = await fetch(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Go' }] }),
      });
      return res.text();
    });
    await fake.waitForRequests(20);
    const stopped = tg.gateway.stop(5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const refused = await fetch(`${tg.url}/v1/messages`, { method: 'POST' }).then(
      () => 'answered',
      () => 'refused',
    );
    expect(refused).to.equal('refused');

    const bodies = await Promise.all(streams);
    for (const body of bodies) expect(body).to.include('event: message_stop').and.not.include('event: error');
    await stopped;
    const charges = await tg.store.listCharges({ accountId: tg.accountId, limit: 100 });
    expect(charges).to.have.length(20);
    for (const charge of charges) expect(charge).to.deep.include({ outcome: 'delivered', usageSource: 'upstream' });
  });
});
