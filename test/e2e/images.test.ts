/**
 * POST /v1/images/generations end to end, with the official `openai` SDK (`client.images.generate`)
 * against the fake upstream: plain and streamed with partial images, the charge from the reply's usage
 * at the image prices to the nano-unit, `n` images held (402 when they cannot be), per-image prices,
 * failover before the first byte, the 400s of a model of the wrong kind, and rate limits counting the
 * request and its image tokens.
 *
 * Runs on the embedded store and on PostgreSQL + Redis (skipped, saying so, without them).
 *
 * Prices: gpt-image per 1M tokens: input 5, cache_hit 1.25, image_input 10, image_output 40, so per
 * token in nano-units 5,000 / 10,000 / 40,000; dall-e per image: 1024x1024/standard 0.04 (listed
 * first), 1024x1792/hd 0.12.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { unitsToNano } from '../../src/billing/money';
import { openBook } from '../../src/billing/open-book';
import { parseConfig } from '../../src/config/load';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { onEachBackend, type Backend } from '../helpers/backends';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { openaiError } from '../helpers/upstream-replies';

const TEXT_INPUT_NANO = 5000n;
const IMAGE_INPUT_NANO = 10_000n;
const IMAGE_OUTPUT_NANO = 40_000n;
/** gpt-image-1's published output tokens of one 1024x1536 high-quality image, the shipped table's largest. */
const TALL_HIGH_TOKENS = 6240n;
const PIXEL = 'iVBORw0KGgo=';

function yamlFor(url: string, backend: Backend, plugins = ''): string {
  return `
version: 1
server: { host: 127.0.0.1 }
${backend.sections}
providers:
  anthropic: { protocol: anthropic, base_url: ${url}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${url}/v1, api_key: ${PROVIDER_KEYS.openai} }
  openai-down: { protocol: openai, base_url: ${url}/down/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-image:
    family: openai
    kind: image
    routes: [{ provider: openai, upstream_model: gpt-image-1 }]
    price: { input: 5, cache_hit: 1.25, image_input: 10, image_output: 40 }
  gpt-image-failover:
    family: openai
    kind: image
    routes: [{ provider: openai-down, upstream_model: gpt-image-1 }, { provider: openai, upstream_model: gpt-image-1, priority: 1 }]
    price: { input: 5, cache_hit: 1.25, image_input: 10, image_output: 40 }
  dall-e:
    family: openai
    kind: image
    routes: [{ provider: openai, upstream_model: dall-e-3 }]
    price: { per_image: { "1024x1024/standard": 0.04, "1024x1792/hd": 0.12 } }
  gpt-text:
    family: openai
    routes: [{ provider: openai }]
    price: { input: 1, output: 5 }
    max_output_tokens: 1000
    context_window: 200000
  claude-text:
    family: anthropic
    routes: [{ provider: anthropic }]
    price: { input: 1, output: 5 }
    max_output_tokens: 1000
    context_window: 200000
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 2, backoff_base_ms: 1, backoff_max_ms: 5 } }
${plugins}
`;
}

/** A gpt-image reply: `images` images and the usage as given. */
function imageReply(usage: Record<string, unknown> | null, images = 1) {
  return {
    status: 200,
    json: {
      created: 1_700_000_000,
      data: Array.from({ length: images }, () => ({ b64_json: PIXEL })),
      ...(usage === null ? {} : { usage }),
    },
  };
}

function usageOf(textIn: number, imageIn: number, out: number): Record<string, unknown> {
  return { input_tokens: textIn + imageIn, input_tokens_details: { text_tokens: textIn, image_tokens: imageIn }, output_tokens: out, total_tokens: textIn + imageIn + out };
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

onEachBackend((backend) => `e2e: images on ${backend}`, 'images', images);

function images(backendOf: () => Backend): void {
  let fake: FakeUpstream;
  let tg: TestGateway;
  let client: OpenAI;

  async function start(credit = '10', plugins = ''): Promise<void> {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url, backendOf(), plugins), storeFromConfig: true });
    if (credit !== '0') await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano(credit), kind: 'admin', actor: 'test', note: 'start' });
    client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: tg.key, maxRetries: 0 });
  }

  /** Credits through the balance book, as the CLI and the console do, so a Redis book sees it too. */
  async function topUp(amount: bigint): Promise<void> {
    const book = await openBook(parseConfig(yamlFor(fake.url, backendOf()), 'topup.yaml', {}), tg.store);
    await book.credit({ accountId: tg.accountId, amount, kind: 'admin', actor: 'test', note: 'top up' });
    await book.close();
  }

  async function charges(count: number): Promise<ChargeRecord[]> {
    const list = await waitFor(
      () => tg.store.listCharges({ accountId: tg.accountId, limit: 100 }),
      (found) => found.length >= count,
    );
    expect(list).to.have.length(count);
    return list;
  }

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  describe('token-priced (gpt-image-1)', () => {
    beforeEach(() => start());

    it('generates an image, forwards the body as sent (model renamed), and charges usage x image prices to the nano-unit', async () => {
      fake.enqueue(imageReply(usageOf(40, 10, 272)));
      const params = { model: 'gpt-image', prompt: 'A lighthouse at dusk', size: '1024x1024', quality: 'low', background: 'opaque', output_format: 'png', moderation: 'low', user: 'u-1' } as const;

      const { data: result, response } = await client.images.generate(params).withResponse();

      expect(result.data?.[0].b64_json).to.equal(PIXEL);
      expect(fake.requests[0].path).to.equal('/v1/images/generations');
      expect(fake.requests[0].headers.authorization).to.equal(`Bearer ${PROVIDER_KEYS.openai}`);
      expect(fake.requests[0].json()).to.deep.equal({ ...params, model: 'gpt-image-1' });
      // 40 text x 5,000 + 10 image input x 10,000 + 272 image output x 40,000 = 11,180,000 nano-units.
      const expected = 40n * TEXT_INPUT_NANO + 10n * IMAGE_INPUT_NANO + 272n * IMAGE_OUTPUT_NANO;
      expect(expected).to.equal(11_180_000n);
      expect(response.headers.get('x-tollgate-cost')).to.equal('0.01118');
      const [charge] = await charges(1);
      expect(charge).to.include({ endpoint: 'images', inputTokens: 40, imageInputTokens: 10, imageOutputTokens: 272, outputTokens: 0, images: 1, usageSource: 'upstream', provider: 'openai' });
      expect(charge.cost).to.equal(expected);
      expect(charge.prices?.tokens.imageOutputTokens).to.equal('40000000000');
    });

    it('streams partial images and the completed image, and charges the completed event usage', async () => {
      const base = { background: 'opaque', output_format: 'png', quality: 'medium', size: '1024x1536', created_at: 1_700_000_000 };
      const events: SseEvent[] = [
        { event: 'image_generation.partial_image', data: { type: 'image_generation.partial_image', b64_json: PIXEL, partial_image_index: 0, ...base } },
        { event: 'image_generation.partial_image', data: { type: 'image_generation.partial_image', b64_json: PIXEL, partial_image_index: 1, ...base } },
        { event: 'image_generation.completed', data: { type: 'image_generation.completed', b64_json: PIXEL, ...base, usage: usageOf(20, 0, 1584) } },
      ];
      fake.enqueue({ headers: { 'content-type': 'text/event-stream' }, events });

      const stream = await client.images.generate({ model: 'gpt-image', prompt: 'A tall tower', size: '1024x1536', quality: 'medium', stream: true, partial_images: 2 });
      const seen: string[] = [];
      for await (const event of stream) seen.push(event.type);

      expect(seen).to.deep.equal(['image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed']);
      expect(fake.requests[0].json()).to.deep.include({ model: 'gpt-image-1', stream: true, partial_images: 2 });
      const [charge] = await charges(1);
      expect(charge).to.include({ inputTokens: 20, imageOutputTokens: 1584, images: 1, usageSource: 'upstream' });
      expect(charge.cost).to.equal(20n * TEXT_INPUT_NANO + 1584n * IMAGE_OUTPUT_NANO);
    });

    it('charges an image whose reply reports no usage at the table figure, marked estimated', async () => {
      fake.enqueue(imageReply(null, 2));

      const result = await client.images.generate({ model: 'gpt-image', prompt: 'two cats', size: '1536x1024', quality: 'high', n: 2 });

      expect(result.data).to.have.length(2);
      const [charge] = await charges(1);
      // 1536x1024/high is 6,208 tokens an image in the shipped table.
      expect(charge).to.include({ imageOutputTokens: 2 * 6208, images: 2, usageSource: 'estimated' });
      expect(charge.inputTokens).to.be.greaterThan(0);
      expect(charge.cost).to.equal(BigInt(charge.inputTokens) * TEXT_INPUT_NANO + 2n * 6208n * IMAGE_OUTPUT_NANO);
    });
  });

  describe('the hold', () => {
    /** What a body holds: one prompt token per byte at the text input price, n images at the largest output the size and quality reach. */
    function holdOf(body: string, perImageTokens: bigint, n: bigint): bigint {
      return BigInt(Buffer.byteLength(body)) * TEXT_INPUT_NANO + n * perImageTokens * IMAGE_OUTPUT_NANO;
    }

    async function post(body: string): Promise<Response> {
      return fetch(`${tg.url}/v1/images/generations`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` }, body });
    }

    it('holds n: 4 for four images: a balance one nano-unit short gets 402, and one more lets it through', async () => {
      const body = JSON.stringify({ model: 'gpt-image', prompt: 'four towers', n: 4, quality: 'high' });
      // No size named: the largest high-quality image (1024x1536, 6,240 tokens) is held for each of four.
      const hold = holdOf(body, TALL_HIGH_TOKENS, 4n);
      expect(hold - 1n > holdOf(body, TALL_HIGH_TOKENS, 3n), 'the balance could hold three').to.equal(true);
      await start('0');
      await tg.store.credit({ accountId: tg.accountId, amount: hold - 1n, kind: 'admin', actor: 'test', note: 'three and a bit' });

      const refused = await post(body);
      expect(refused.status).to.equal(402);
      const error = ((await refused.json()) as { error: { code: string; message: string } }).error;
      expect(error.code).to.equal('insufficient_balance');
      expect(error.message).to.include('4 images');
      expect(fake.requests).to.have.length(0);

      await topUp(1n);
      fake.enqueue(imageReply(usageOf(5, 0, 4 * 4160), 4));
      const served = await post(body);
      expect(served.status).to.equal(200);
      const [charge] = await charges(1);
      expect(charge.held).to.equal(hold);
      expect(charge.cost).to.equal(5n * TEXT_INPUT_NANO + 4n * 4160n * IMAGE_OUTPUT_NANO);
    });

    it('answers 402 through the SDK when the balance cannot hold one image', async () => {
      await start('0.001');
      let caught: unknown;
      try {
        await client.images.generate({ model: 'gpt-image', prompt: 'one tower', quality: 'high', size: '1024x1024' });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(OpenAI.APIError);
      expect((caught as InstanceType<typeof OpenAI.APIError>).status).to.equal(402);
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('per-image prices (DALL·E)', () => {
    beforeEach(() => start());

    it('charges each image returned at the size and quality asked, and names the price on the charge', async () => {
      fake.enqueue(imageReply(null, 2));

      const result = await client.images.generate({ model: 'dall-e', prompt: 'a map', size: '1024x1792', quality: 'hd', n: 2, response_format: 'b64_json' });

      expect(result.data).to.have.length(2);
      expect(fake.requests[0].json()).to.deep.include({ model: 'dall-e-3', response_format: 'b64_json', n: 2 });
      const [charge] = await charges(1);
      expect(charge).to.include({ images: 2, imageOutputTokens: 0, usageSource: 'upstream' });
      expect(charge.cost).to.equal(2n * unitsToNano('0.12'));
      expect(charge.prices?.per_image).to.deep.equal({ key: '1024x1792/hd', nano: String(unitsToNano('0.12')) });
      // The images the upstream returned are what is charged, whatever n was.
      fake.enqueue(imageReply(null, 1));
      await client.images.generate({ model: 'dall-e', prompt: 'a map', n: 3 });
      const both = await charges(2);
      const second = both.find((c) => c.requestId !== charge.requestId)!;
      // Neither size nor quality named: the first key listed, the provider's default.
      expect(second.cost).to.equal(unitsToNano('0.04'));
      // Held: three images at the dearest price the request could reach (it named neither part); no text price.
      expect(second.held).to.equal(3n * unitsToNano('0.12'));
    });

    it('refuses a size and quality the model has no price for, before the provider is called', async () => {
      let caught: unknown;
      try {
        await client.images.generate({ model: 'dall-e', prompt: 'a map', size: '512x512' });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(OpenAI.BadRequestError);
      expect((caught as InstanceType<typeof OpenAI.BadRequestError>).message).to.include('no price for 512x512');
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('failover', () => {
    beforeEach(() => start());

    it('fails over from a failing provider to the second before the first byte, and charges once', async () => {
      fake.enqueue(openaiError(500, 'the first provider is down'));
      fake.enqueue(imageReply(usageOf(12, 0, 272)));

      const result = await client.images.generate({ model: 'gpt-image-failover', prompt: 'a bridge', size: '1024x1024', quality: 'low' });

      expect(result.data?.[0].b64_json).to.equal(PIXEL);
      expect(fake.requests.map((request) => request.path)).to.deep.equal(['/down/v1/images/generations', '/v1/images/generations']);
      const [charge] = await charges(1);
      expect(charge.provider).to.equal('openai');
      expect(charge.attempts?.map((attempt) => attempt.outcome)).to.deep.equal(['status_500', 'ok']);
      expect(charge.cost).to.equal(12n * TEXT_INPUT_NANO + 272n * IMAGE_OUTPUT_NANO);
    });
  });

  describe('a model of the wrong kind', () => {
    beforeEach(() => start());

    async function refusal(run: () => Promise<unknown>): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
      try {
        await run();
      } catch (error) {
        expect(error).to.be.instanceOf(OpenAI.BadRequestError);
        return error as InstanceType<typeof OpenAI.BadRequestError>;
      }
      throw new Error('expected a 400');
    }

    it('refuses a text model on images with a 400 in the OpenAI shape', async () => {
      const error = await refusal(() => client.images.generate({ model: 'gpt-text', prompt: 'x' }));
      expect(error.code).to.equal('unsupported_model_for_endpoint');
      expect(error.param).to.equal('model');
      expect(error.message).to.include("'gpt-text' is a text model");
    });

    it('refuses a Claude model on images with a 400', async () => {
      const error = await refusal(() => client.images.generate({ model: 'claude-text', prompt: 'x' }));
      expect(error.code).to.equal('unsupported_model_for_endpoint');
      expect(error.message).to.include('/v1/images/generations');
    });

    it('refuses an image model on chat completions with a 400', async () => {
      const error = await refusal(() => client.chat.completions.create({ model: 'gpt-image', messages: [{ role: 'user', content: 'x' }] }));
      expect(error.code).to.equal('unsupported_model_for_endpoint');
      expect(error.message).to.include('use POST /v1/images/generations');
      expect(fake.requests).to.have.length(0);
      expect(await tg.store.listCharges({ accountId: tg.accountId, limit: 10 })).to.have.length(0);
    });
  });

  describe('rate limits', () => {
    it('count an image request as a request', async () => {
      await start('10', '  rate-limit: { per_key: { rpm: 1 } }');
      fake.enqueue(imageReply(usageOf(5, 0, 272)));
      await client.images.generate({ model: 'gpt-image', prompt: 'one', size: '1024x1024', quality: 'low' });
      let caught: unknown;
      try {
        await client.images.generate({ model: 'gpt-image', prompt: 'two', size: '1024x1024', quality: 'low' });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(OpenAI.RateLimitError);
      expect((caught as InstanceType<typeof OpenAI.RateLimitError>).code).to.equal('rate_limit_exceeded');
      expect(fake.requests).to.have.length(1);
    });

    it('count its image tokens as tokens', async () => {
      await start('10', '  rate-limit: { per_key: { tpm: 5000 } }');
      // Reserved: its prompt and one low 1024x1024 image (272 tokens); used: what the usage says, 4,800 image tokens.
      fake.enqueue(imageReply(usageOf(5, 0, 4800)));
      await client.images.generate({ model: 'gpt-image', prompt: 'one', size: '1024x1024', quality: 'low' });
      await charges(1);
      let caught: unknown;
      try {
        await client.images.generate({ model: 'gpt-image', prompt: 'two', size: '1024x1024', quality: 'low' });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(OpenAI.RateLimitError);
      expect((caught as InstanceType<typeof OpenAI.RateLimitError>).message).to.include('tokens per minute');
      expect(fake.requests).to.have.length(1);
    });
  });
}
