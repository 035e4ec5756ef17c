/**
 * The Responses API's `image_generation` tool, streamed with `partial_images`: the upstream sends
 * `response.image_generation_call.partial_image` events before `response.completed`, which carries the
 * tool's usage (`tool_usage.image_gen`). A client that leaves after the partial images, or an upstream
 * that ends after them, never gets that usage: each partial image delivered is charged as OpenAI bills
 * it, 100 image output tokens, and the charge says `partial`. Each call the upstream started is charged
 * its image at the one-image estimate of the tool's size and quality: in full when the image came, as a
 * floor under its partial images when it did not. A completed response is charged its usage, which
 * already counts its partial images; the hold covers the partial images asked for.
 *
 * Prices per 1M tokens: input 1.25, output 10, image_output 40, so per token in nano-units 1,250 /
 * 10,000 / 40,000.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';

const INPUT_NANO = 1250n;
const OUTPUT_NANO = 10_000n;
const IMAGE_OUTPUT_NANO = 40_000n;
/** What OpenAI bills each partial image, in image output tokens (docs/billing.md#images). */
const PARTIAL_TOKENS = 100;
const PIXEL = 'iVBORw0KGgo=';

const YAML = (url: string) => `
version: 1
server: { host: 127.0.0.1 }
providers:
  openai: { protocol: openai, base_url: ${url}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-drawing:
    family: openai
    routes: [{ provider: openai }]
    price: { input: 1.25, output: 10, image_input: 10, image_output: 40 }
    max_output_tokens: 1000
    context_window: 10000
plugins:
  billing: { flush_interval_ms: 10 }
`;

function requestBody(partials: number | undefined, ask: { size?: string; quality?: string } = {}): string {
  const tool = partials === undefined ? { type: 'image_generation', ...ask } : { type: 'image_generation', partial_images: partials, ...ask };
  return JSON.stringify({ model: 'gpt-drawing', input: 'Draw a lighthouse', stream: true, max_tool_calls: 1, tools: [tool] });
}

/** gpt-image-1's output tokens for one 1024x1024 medium image, and for its largest (1024x1536 high): docs/billing.md#images. */
const MEDIUM_SQUARE_TOKENS = 1056;
const LARGEST_TOKENS = 6240;

const RESPONSE = { id: 'resp_img', object: 'response', model: 'gpt-drawing', status: 'in_progress', output: [], usage: null };

/** The events up to and including the partial images, as OpenAI streams them. */
function upToPartials(count: number): SseEvent[] {
  const call = { type: 'image_generation_call', id: 'ig_1', status: 'in_progress' };
  const frame = (type: string, data: object): SseEvent => ({ event: type, data: { type, ...data } });
  return [
    frame('response.created', { response: RESPONSE }),
    frame('response.output_item.added', { output_index: 0, item: call }),
    frame('response.image_generation_call.in_progress', { output_index: 0, item_id: 'ig_1' }),
    frame('response.image_generation_call.generating', { output_index: 0, item_id: 'ig_1' }),
    ...Array.from({ length: count }, (_, index) =>
      frame('response.image_generation_call.partial_image', { output_index: 0, item_id: 'ig_1', partial_image_index: index, partial_image_b64: PIXEL }),
    ),
  ];
}

const FINISHED_ITEM = { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: PIXEL };

/** The events of a call whose image came, as OpenAI streams them before `response.completed`. */
function imageDone(): SseEvent[] {
  return [
    { event: 'response.image_generation_call.completed', data: { type: 'response.image_generation_call.completed', output_index: 0, item_id: 'ig_1' } },
    { event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: 0, item: FINISHED_ITEM } },
  ];
}

/** The end of a response whose image completed: its usage, and the tool's usage with its partial images in it. */
function completion(imageOutputTokens: number): SseEvent[] {
  const item = FINISHED_ITEM;
  return [
    ...imageDone(),
    {
      event: 'response.completed',
      data: {
        type: 'response.completed',
        response: {
          ...RESPONSE,
          status: 'completed',
          output: [item],
          usage: { input_tokens: 40, input_tokens_details: { cached_tokens: 0 }, output_tokens: 12, total_tokens: 52 },
          tool_usage: { image_gen: { input_tokens: 9, input_tokens_details: { text_tokens: 9, image_tokens: 0 }, output_tokens: imageOutputTokens, total_tokens: 9 + imageOutputTokens } },
        },
      },
    },
  ];
}

describe('e2e: Responses image_generation streams that do not finish', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: YAML(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
  });

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  function post(body: string, signal?: AbortSignal): Promise<Response> {
    return fetch(`${tg.url}/v1/responses`, { method: 'POST', signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` }, body });
  }

  async function chargeFor(res: Response): Promise<ChargeRecord> {
    const requestId = res.headers.get('x-request-id');
    const deadline = Date.now() + 10_000;
    for (;;) {
      const found = (await tg.store.listCharges({ accountId: tg.accountId, limit: 100 })).find((charge) => charge.requestId === requestId);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no charge for ${requestId}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The charge's cost from its own counts: what each kind costs, summed (every price here is whole nano-units per token). */
  function costOfCounts(charge: ChargeRecord): bigint {
    return BigInt(charge.inputTokens) * INPUT_NANO + BigInt(charge.outputTokens) * OUTPUT_NANO + BigInt(charge.imageOutputTokens) * IMAGE_OUTPUT_NANO;
  }

  it('charges a client that leaves after two partial images of an unnamed size the largest image, the floor above them, marked partial', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...upToPartials(2), { until: gate }] });
    const controller = new AbortController();
    const res = await post(requestBody(2), controller.signal);
    expect(res.status).to.equal(200);
    try {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let received = '';
      while (received.split('event: response.image_generation_call.partial_image').length - 1 < 2) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended after ${received.length} characters`);
        received += decoder.decode(value, { stream: true });
      }
      controller.abort();
      await fake.waitForClose(0);
    } finally {
      release();
    }

    const charge = await chargeFor(res);
    // Two partial images (2 × 100) are under the one-image estimate, which is the floor.
    expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'aborted', imageOutputTokens: LARGEST_TOKENS });
    // The prompt is counted by the tokenizer, as for any stream cut before its usage.
    expect(charge.inputTokens).to.be.greaterThan(0);
    expect(charge.cost).to.equal(costOfCounts(charge));
    expect(charge.cost >= BigInt(2 * PARTIAL_TOKENS) * IMAGE_OUTPUT_NANO).to.equal(true);
  });

  it('charges a stream the upstream ends after three partial images of a small image, before response.completed, 3 × 100, marked partial', async () => {
    // 1024x1024 low is 272 image output tokens: three partial images (300) are more, and are charged.
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: upToPartials(3) });
    const res = await post(requestBody(3, { size: '1024x1024', quality: 'low' }));
    expect(res.status).to.equal(200);
    await res.text();

    const charge = await chargeFor(res);
    expect(charge).to.deep.include({ usageSource: 'partial', imageOutputTokens: 3 * PARTIAL_TOKENS });
    expect(charge.inputTokens).to.be.greaterThan(0);
    expect(charge.cost).to.equal(costOfCounts(charge));
  });

  it('charges a completed one its usage as reported, which already counts its partial images', async () => {
    // 1,584 for the image and 2 × 100 for its partial images, as the upstream reports them.
    const reported = 1584 + 2 * PARTIAL_TOKENS;
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...upToPartials(2), ...completion(reported)] });
    const res = await post(requestBody(2));
    expect(res.status).to.equal(200);
    await res.text();

    const charge = await chargeFor(res);
    expect(charge).to.deep.include({ usageSource: 'upstream', inputTokens: 40 + 9, outputTokens: 12, imageOutputTokens: reported });
    expect(charge.cost).to.equal(costOfCounts(charge));
  });

  it('charges a call the upstream started but did not finish, with no partial image, one image of its size and quality, marked partial', async () => {
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: upToPartials(0) });
    const res = await post(requestBody(undefined, { size: '1024x1024', quality: 'medium' }));
    expect(res.status).to.equal(200);
    await res.text();

    const charge = await chargeFor(res);
    expect(charge).to.deep.include({ usageSource: 'partial', imageOutputTokens: MEDIUM_SQUARE_TOKENS });
    expect(charge.inputTokens).to.be.greaterThan(0);
    expect(charge.cost).to.equal(costOfCounts(charge));
    expect(charge.cost >= BigInt(MEDIUM_SQUARE_TOKENS) * IMAGE_OUTPUT_NANO).to.equal(true);
  });

  it('charges a client that leaves a started call before any partial image the largest image, as /v1/images estimates one that names no size', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...upToPartials(0), { until: gate }] });
    const controller = new AbortController();
    const res = await post(requestBody(undefined), controller.signal);
    expect(res.status).to.equal(200);
    try {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let received = '';
      while (!received.includes('event: response.image_generation_call.generating')) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended after ${received.length} characters`);
        received += decoder.decode(value, { stream: true });
      }
      controller.abort();
      await fake.waitForClose(0);
    } finally {
      release();
    }

    const charge = await chargeFor(res);
    expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'aborted', imageOutputTokens: LARGEST_TOKENS });
    expect(charge.cost).to.equal(costOfCounts(charge));
  });

  it('charges an image that came, cut before response.completed, the full one-image estimate and its partial images, marked partial', async () => {
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...upToPartials(2), ...imageDone()] });
    const res = await post(requestBody(2, { size: '1024x1024', quality: 'medium' }));
    expect(res.status).to.equal(200);
    await res.text();

    const charge = await chargeFor(res);
    expect(charge).to.deep.include({ usageSource: 'partial', imageOutputTokens: MEDIUM_SQUARE_TOKENS + 2 * PARTIAL_TOKENS });
    expect(charge.cost).to.equal(costOfCounts(charge));
  });

  it('charges a response whose usage came from that usage alone, with no estimate added for its image', async () => {
    // A 1024x1024 low image (272) is far under the medium estimate: the usage, not the estimate, is charged.
    fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events: [...upToPartials(0), ...completion(272)] });
    const res = await post(requestBody(undefined, { size: '1024x1024', quality: 'medium' }));
    expect(res.status).to.equal(200);
    await res.text();

    const charge = await chargeFor(res);
    expect(charge).to.deep.include({ usageSource: 'upstream', inputTokens: 40 + 9, outputTokens: 12, imageOutputTokens: 272 });
    expect(charge.cost).to.equal(costOfCounts(charge));
  });

  it('holds the partial images a stream asks of each allowed call, 100 image output tokens each', async () => {
    const completed = () => ({ headers: { 'content-type': 'text/event-stream' }, events: [...upToPartials(0), ...completion(1584)] });
    fake.enqueue(completed());
    const without = await post(requestBody(undefined));
    await without.text();
    fake.enqueue(completed());
    const withPartials = await post(requestBody(3));
    await withPartials.text();

    const plain = await chargeFor(without);
    const partial = await chargeFor(withPartials);
    // One allowed call (max_tool_calls: 1), three partial images before its image.
    expect(partial.held - plain.held).to.equal(BigInt(3 * PARTIAL_TOKENS) * IMAGE_OUTPUT_NANO);
  });
});
