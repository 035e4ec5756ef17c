/**
 * A streamed image generation (`stream: true, partial_images: N`) that the upstream ran but did not
 * finish: the client leaves after the partial images, or the upstream ends (or breaks) after them,
 * before `image_generation.completed`. Each is charged at least what its hold estimated, marked
 * `partial`, never 0; and a streamed request holds its partial images (100 image output tokens each).
 *
 * Runs on the embedded store and on PostgreSQL + Redis (skipped, saying so, without them).
 *
 * Prices: gpt-image per 1M tokens: input 5, image_output 40, so per token in nano-units 5,000 /
 * 40,000; dall-e per image: 1024x1024/standard 0.04 (listed first), 1024x1792/hd 0.12.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { onEachBackend, type Backend } from '../helpers/backends';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';

const TEXT_INPUT_NANO = 5000n;
const IMAGE_OUTPUT_NANO = 40_000n;
/** gpt-image-1's published output tokens of one 1024x1536 medium image. */
const TALL_MEDIUM_TOKENS = 1584n;
/** What OpenAI bills each partial image, in image output tokens. */
const PARTIAL_TOKENS = 100n;
const PIXEL = 'iVBORw0KGgo=';

function yamlFor(url: string, backend: Backend): string {
  return `
version: 1
server: { host: 127.0.0.1 }
${backend.sections}
providers:
  openai: { protocol: openai, base_url: ${url}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-image:
    family: openai
    kind: image
    routes: [{ provider: openai, upstream_model: gpt-image-1 }]
    price: { input: 5, cache_hit: 1.25, image_input: 10, image_output: 40 }
  dall-e:
    family: openai
    kind: image
    routes: [{ provider: openai, upstream_model: dall-e-3 }]
    price: { per_image: { "1024x1024/standard": 0.04, "1024x1792/hd": 0.12 } }
plugins:
  billing: { flush_interval_ms: 10 }
`;
}

function partials(count: number, size: string, quality: string): SseEvent[] {
  const base = { background: 'opaque', output_format: 'png', quality, size, created_at: 1_700_000_000 };
  return Array.from({ length: count }, (_, index) => ({
    event: 'image_generation.partial_image',
    data: { type: 'image_generation.partial_image', b64_json: PIXEL, partial_image_index: index, ...base },
  }));
}

onEachBackend((backend) => `e2e: unfinished image streams on ${backend}`, 'images-unfinished', unfinishedImages);

function unfinishedImages(backendOf: () => Backend): void {
  let fake: FakeUpstream;
  let tg: TestGateway;

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url, backendOf()), storeFromConfig: true });
  });

  /** Credited before the first request, so a Redis book seeds it from the store. */
  async function credit(amount: bigint): Promise<void> {
    await tg.store.credit({ accountId: tg.accountId, amount, kind: 'admin', actor: 'test', note: 'start' });
  }

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  function post(body: string, signal?: AbortSignal): Promise<Response> {
    return fetch(`${tg.url}/v1/images/generations`, { method: 'POST', signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` }, body });
  }

  async function chargeFor(requestId: string): Promise<ChargeRecord> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const found = (await tg.store.listCharges({ accountId: tg.accountId, limit: 100 })).find((charge) => charge.requestId === requestId);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no charge for ${requestId}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Reads the stream until `count` partial images came, then leaves. */
  async function readPartialsAndLeave(res: Response, controller: AbortController, count: number): Promise<void> {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (received.split('event: image_generation.partial_image').length - 1 < count) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended after ${received.length} characters`);
      received += decoder.decode(value, { stream: true });
    }
    controller.abort();
  }

  describe('token-priced (gpt-image-1)', () => {
    const body = JSON.stringify({ model: 'gpt-image', prompt: 'A tall tower', size: '1024x1536', quality: 'medium', stream: true, partial_images: 2 });
    /** The hold: the prompt at one token per byte, the image at its table figure and its two partial images. */
    const hold = BigInt(Buffer.byteLength(body)) * TEXT_INPUT_NANO + (TALL_MEDIUM_TOKENS + 2n * PARTIAL_TOKENS) * IMAGE_OUTPUT_NANO;

    it('charges a client that leaves after the partial images at least its hold, marked partial', async () => {
      await credit(unitsToNano('10'));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...partials(2, '1024x1536', 'medium'), { until: gate }] });
      const controller = new AbortController();
      const res = await post(body, controller.signal);
      expect(res.status).to.equal(200);
      try {
        await readPartialsAndLeave(res, controller, 2);
        await fake.waitForClose(0);
      } finally {
        release();
      }

      const charge = await chargeFor(res.headers.get('x-request-id')!);
      expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'aborted', images: 0, inputTokens: Buffer.byteLength(body), imageOutputTokens: Number(TALL_MEDIUM_TOKENS + 2n * PARTIAL_TOKENS) });
      expect(charge.held).to.equal(hold);
      expect(charge.cost).to.equal(hold);
    });

    it('charges a stream the upstream ends after the partial images at least its hold, marked partial', async () => {
      await credit(unitsToNano('10'));
      fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: partials(2, '1024x1536', 'medium') });
      const res = await post(body);
      expect(res.status).to.equal(200);
      await res.text();

      const charge = await chargeFor(res.headers.get('x-request-id')!);
      expect(charge).to.deep.include({ usageSource: 'partial', images: 0, imageOutputTokens: Number(TALL_MEDIUM_TOKENS + 2n * PARTIAL_TOKENS) });
      expect(charge.cost).to.equal(hold);
    });

    it('holds the partial images a stream asks for: a balance one nano-unit short of them gets 402', async () => {
      const without = BigInt(Buffer.byteLength(body)) * TEXT_INPUT_NANO + TALL_MEDIUM_TOKENS * IMAGE_OUTPUT_NANO;
      // The hold less one nano-unit: more than the image alone, less than with its partials.
      expect(hold - 1n > without).to.equal(true);
      await credit(hold - 1n);

      const refused = await post(body);
      expect(refused.status).to.equal(402);
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('per-image prices (DALL·E)', () => {
    it('charges a stream the upstream ends after the partial images its held image, marked partial', async () => {
      await credit(unitsToNano('10'));
      const body = JSON.stringify({ model: 'dall-e', prompt: 'a map', stream: true, partial_images: 1 });
      fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: partials(1, '1024x1024', 'standard') });
      const res = await post(body);
      expect(res.status).to.equal(200);
      await res.text();

      const charge = await chargeFor(res.headers.get('x-request-id')!);
      // Neither size nor quality named: held, and charged, at the dearest price it could reach.
      expect(charge).to.deep.include({ usageSource: 'partial', images: 1 });
      expect(charge.held).to.equal(unitsToNano('0.12'));
      expect(charge.cost).to.equal(unitsToNano('0.12'));
      expect(charge.prices?.per_image).to.deep.equal({ key: '1024x1792/hd', nano: String(unitsToNano('0.12')) });
    });

    it('charges a client that leaves after the partial images the image it asked for, marked partial', async () => {
      await credit(unitsToNano('10'));
      const body = JSON.stringify({ model: 'dall-e', prompt: 'a map', size: '1024x1024', quality: 'standard', stream: true, partial_images: 2 });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...partials(2, '1024x1024', 'standard'), { until: gate }] });
      const controller = new AbortController();
      const res = await post(body, controller.signal);
      try {
        await readPartialsAndLeave(res, controller, 2);
        await fake.waitForClose(0);
      } finally {
        release();
      }

      const charge = await chargeFor(res.headers.get('x-request-id')!);
      expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'aborted', images: 1 });
      expect(charge.cost).to.equal(unitsToNano('0.04'));
    });
  });
}
