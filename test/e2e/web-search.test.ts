/**
 * Hosted web search on a Claude model, end to end: a Responses `web_search` tool or chat
 * `web_search_options` reaches the fake Anthropic upstream as its web search server tool; the searches
 * and citations come back as `web_search_call` items and `url_citation` annotations, plain and
 * streamed; each search is charged at the model's `tool_calls.web_search` price and held for the
 * `max_uses` sent; follow-up turns (by `previous_response_id` or with the whole history) reach
 * Anthropic without the search blocks it would refuse.
 *
 * Prices per 1M tokens: input 1, cache_write_1h 2 (the dearest input price, which holds are sized at),
 * output 5; web search 10 per 1,000 calls. In nano-units: 1,000 / 2,000 / 5,000 per token and
 * 10,000,000 per search. Models: max_output_tokens 1000, context_window 200000.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { startTestGateway, PROVIDER_KEYS, type TestGateway } from '../helpers/test-gateway';

const INPUT_NANO = 1000n;
const HOLD_INPUT_NANO = 2000n;
const OUTPUT_NANO = 5000n;
const SEARCH_NANO = 10_000_000n;
const CONTEXT_WINDOW = 200_000n;

function yamlFor(upstreamUrl: string, translate = '{}'): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
models:
  claude-priced:
    family: anthropic
    routes: [{ provider: anthropic }]
    price: { input: 1, cache_write: 1.25, cache_write_1h: 2, cache_hit: 0.1, output: 5, tool_calls: { web_search: 10 } }
    max_output_tokens: 1000
    context_window: 200000
plugins:
  billing: { flush_interval_ms: 10 }
  translate: ${translate}
  upstream: { failover: { max_attempts: 1 } }
`;
}

const RESULTS = [
  { type: 'web_search_result', url: 'https://weather.example/paris', title: 'Paris weather', encrypted_content: 'EqgfCioIARgB', page_age: '1 hour ago' },
  { type: 'web_search_result', url: 'https://meteo.example/paris', title: 'Météo Paris', encrypted_content: 'EqgfCioIARgC', page_age: null },
];
const CITATION = { type: 'web_search_result_location', url: 'https://weather.example/paris', title: 'Paris weather', encrypted_index: 'Eo8B', cited_text: 'Sunny, 21 C' };
const CONTENT = [
  { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'Paris weather' } },
  { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: RESULTS },
  { type: 'server_tool_use', id: 'srvtoolu_2', name: 'web_search', input: { query: 'Paris wind' } },
  { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_2', content: RESULTS.slice(1) },
  { type: 'text', text: 'In Paris today: ' },
  { type: 'text', text: 'sunny, 21 C', citations: [CITATION] },
  { type: 'text', text: '.' },
];
const USAGE = { input_tokens: 2100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 90, server_tool_use: { web_search_requests: 2 } };
/** 2,100 × 1,000 + 90 × 5,000 + 2 × 10,000,000. */
const COST = 2100n * INPUT_NANO + 90n * OUTPUT_NANO + 2n * SEARCH_NANO;
const ANSWER = 'In Paris today: sunny, 21 C.';

function searchedMessage() {
  return { id: 'msg_ws', type: 'message', role: 'assistant', model: 'claude-priced', content: CONTENT, stop_reason: 'end_turn', stop_sequence: null, usage: USAGE };
}

/** The same answer as Anthropic streams it: search input in fragments, each result whole, citations before their text. */
function searchedEvents(): SseEvent[] {
  const events: SseEvent[] = [
    { event: 'message_start', data: { type: 'message_start', message: { ...searchedMessage(), content: [], stop_reason: null, usage: { ...USAGE, output_tokens: 1, server_tool_use: undefined } } } },
  ];
  CONTENT.forEach((block, index) => {
    if (block.type === 'server_tool_use') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { ...block, input: {} } } });
      const json = JSON.stringify(block.input);
      for (const partial of [json.slice(0, 9), json.slice(9)]) {
        events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: partial } } });
      }
    } else if (block.type === 'web_search_tool_result') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: block } });
    } else {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } } });
      for (const citation of block.citations ?? []) {
        events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'citations_delta', citation } } });
      }
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } } });
    }
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  });
  events.push(
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 90, server_tool_use: USAGE.server_tool_use } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );
  return events;
}

/** The hold of a translated search request: the whole window (results are input), the output limit, `searches` searches. */
function searchHold(outputLimit: bigint, searches: bigint): bigint {
  return CONTEXT_WINDOW * HOLD_INPUT_NANO + outputLimit * OUTPUT_NANO + searches * SEARCH_NANO;
}

interface StreamEvent {
  readonly type: string;
  readonly [key: string]: unknown;
}

function sseEvents(text: string): StreamEvent[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)) as StreamEvent);
}

describe('e2e: hosted web search on a Claude model', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  async function start(translate?: string): Promise<void> {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url, translate), storeFromConfig: true });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
  }

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  async function post(pathname: string, body: unknown): Promise<Response> {
    return fetch(`${tg.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` },
      body: JSON.stringify(body),
    });
  }

  async function chargeFor(answer: Response): Promise<ChargeRecord> {
    const requestId = answer.headers.get('x-request-id');
    const deadline = Date.now() + 5000;
    for (;;) {
      const charge = (await tg.store.listCharges({ limit: 100 })).find((candidate) => candidate.requestId === requestId);
      if (charge !== undefined) return charge;
      if (Date.now() > deadline) throw new Error(`no charge for ${requestId}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  function sentTools(index: number): unknown {
    return (fake.requests[index].json() as { tools?: unknown }).tools;
  }

  describe('Responses', () => {
    beforeEach(() => start());

    it('sends the search tool, returns web_search_call items and annotations, and charges tokens plus searches (plain)', async () => {
      fake.enqueue({ status: 200, json: searchedMessage() });
      const answer = await post('/v1/responses', {
        model: 'claude-priced',
        input: 'Weather in Paris?',
        max_output_tokens: 100,
        tools: [{ type: 'web_search', filters: { allowed_domains: ['weather.example'] }, search_context_size: 'low' }],
      });
      expect(answer.status).to.equal(200);
      const body = (await answer.json()) as { output: Array<Record<string, unknown>> };
      expect(sentTools(0)).to.deep.equal([{ type: 'web_search_20250305', name: 'web_search', max_uses: 5, allowed_domains: ['weather.example'] }]);
      const searches = body.output.filter((item) => item.type === 'web_search_call');
      expect(searches.map((item) => item.action)).to.deep.equal([
        { type: 'search', query: 'Paris weather', sources: RESULTS.map((result) => ({ type: 'url', url: result.url })) },
        { type: 'search', query: 'Paris wind', sources: [{ type: 'url', url: RESULTS[1].url }] },
      ]);
      expect(searches.every((item) => item.status === 'completed' && /^ws_/.test(String(item.id)))).to.equal(true);
      const message = body.output.at(-1) as { type: string; content: Array<{ text: string; annotations: unknown[] }> };
      expect(message.type).to.equal('message');
      expect(message.content[0].text).to.equal(ANSWER);
      expect(message.content[0].annotations).to.deep.equal([{ type: 'url_citation', url: CITATION.url, title: CITATION.title, start_index: 16, end_index: 27 }]);
      expect(ANSWER.slice(16, 27)).to.equal('sunny, 21 C');

      const charge = await chargeFor(answer);
      expect(charge.toolCalls).to.deep.equal({ web_search: 2 });
      expect(charge.cost).to.equal(COST);
      expect(charge.held).to.equal(searchHold(100n, 5n));
      expect(answer.headers.get('x-tollgate-cost')).to.equal('0.02255');
    });

    it('streams the search events and annotations, and charges the same (streamed)', async () => {
      fake.enqueue({ events: searchedEvents() });
      const answer = await post('/v1/responses', { model: 'claude-priced', input: 'Weather in Paris?', max_output_tokens: 100, stream: true, tools: [{ type: 'web_search_preview' }] });
      expect(answer.status).to.equal(200);
      const events = sseEvents(await answer.text());
      const searchEvents = events.filter((event) => event.type.startsWith('response.web_search_call.')).map((event) => event.type);
      expect(searchEvents).to.deep.equal([
        'response.web_search_call.in_progress',
        'response.web_search_call.searching',
        'response.web_search_call.completed',
        'response.web_search_call.in_progress',
        'response.web_search_call.searching',
        'response.web_search_call.completed',
      ]);
      const added = events.filter((event) => event.type === 'response.output_item.added').map((event) => (event.item as { type: string; status: string }));
      expect(added.map((item) => `${item.type}:${item.status}`)).to.deep.equal(['web_search_call:in_progress', 'web_search_call:in_progress', 'message:in_progress']);
      const annotations = events.filter((event) => event.type === 'response.output_text.annotation.added').map((event) => event.annotation);
      expect(annotations).to.deep.equal([{ type: 'url_citation', url: CITATION.url, title: CITATION.title, start_index: 16, end_index: 27 }]);
      const completed = events.find((event) => event.type === 'response.completed') as unknown as { response: { output: Array<{ type: string; content?: Array<{ text: string }> }> } };
      expect(completed.response.output.map((item) => item.type)).to.deep.equal(['web_search_call', 'web_search_call', 'message']);
      expect(completed.response.output[2].content?.[0].text).to.equal(ANSWER);

      const charge = await chargeFor(answer);
      expect(charge.toolCalls).to.deep.equal({ web_search: 2 });
      expect(charge.cost).to.equal(COST);
      expect(charge.held).to.equal(searchHold(100n, 5n));
    });

    it('sends max_tool_calls as max_uses and holds that many searches', async () => {
      fake.enqueue({ status: 200, json: searchedMessage() });
      const answer = await post('/v1/responses', { model: 'claude-priced', input: 'Weather?', max_output_tokens: 100, max_tool_calls: 2, tools: [{ type: 'web_search' }] });
      expect(answer.status).to.equal(200);
      expect(sentTools(0)).to.deep.equal([{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }]);
      expect((await chargeFor(answer)).held).to.equal(searchHold(100n, 2n));
    });

    it('refuses hosted tools Claude has no counterpart for, before anything is sent', async () => {
      const answer = await post('/v1/responses', { model: 'claude-priced', input: 'Hi', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] });
      expect(answer.status).to.equal(400);
      const body = (await answer.json()) as { error: { param: string; message: string } };
      expect(body.error.param).to.equal('tools[0]');
      expect(body.error.message).to.include('file_search');
      expect(fake.requests).to.have.length(0);
    });

    for (const followUp of ['previous_response_id', 'the whole history'] as const) {
      it(`continues after a search by ${followUp}: the searches are left out, the answer is kept`, async () => {
        fake.enqueue({ status: 200, json: searchedMessage() }, { status: 200, json: { ...searchedMessage(), content: [{ type: 'text', text: 'Rain tomorrow.' }] } });
        const first = await post('/v1/responses', { model: 'claude-priced', input: 'Weather in Paris?', tools: [{ type: 'web_search' }] });
        expect(first.status).to.equal(200);
        const firstBody = (await first.json()) as { id: string; output: unknown[] };
        const next =
          followUp === 'previous_response_id'
            ? { previous_response_id: firstBody.id, input: 'And tomorrow?' }
            : { input: [{ role: 'user', content: 'Weather in Paris?' }, ...firstBody.output, { role: 'user', content: 'And tomorrow?' }], store: false };
        const second = await post('/v1/responses', { model: 'claude-priced', tools: [{ type: 'web_search' }], ...next });
        expect(second.status).to.equal(200);
        expect(((await second.json()) as { output: Array<{ content?: Array<{ text: string }> }> }).output[0].content?.[0].text).to.equal('Rain tomorrow.');
        expect((fake.requests[1].json() as { messages: unknown }).messages).to.deep.equal([
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: [{ type: 'text', text: ANSWER }] },
          { role: 'user', content: 'And tomorrow?' },
        ]);
      });
    }
  });

  describe('chat completions', () => {
    beforeEach(() => start('{ web_search_max_uses: 3 }'));

    it('sends web_search_options as the search tool with the configured max_uses, returns url_citation annotations (plain)', async () => {
      fake.enqueue({ status: 200, json: searchedMessage() });
      const answer = await post('/v1/chat/completions', {
        model: 'claude-priced',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        web_search_options: { user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } } },
      });
      expect(answer.status).to.equal(200);
      expect(sentTools(0)).to.deep.equal([{ type: 'web_search_20250305', name: 'web_search', max_uses: 3, user_location: { type: 'approximate', city: 'Paris', country: 'FR' } }]);
      const message = ((await answer.json()) as { choices: Array<{ message: { content: string; annotations: unknown[] } }> }).choices[0].message;
      expect(message.content).to.equal(ANSWER);
      expect(message.annotations).to.deep.equal([{ type: 'url_citation', url_citation: { url: CITATION.url, title: CITATION.title, start_index: 16, end_index: 27 } }]);
      const charge = await chargeFor(answer);
      expect(charge.cost).to.equal(COST);
      expect(charge.held).to.equal(searchHold(100n, 3n));
    });

    it('streams the annotations once their passage is sent, and charges the same (streamed)', async () => {
      fake.enqueue({ events: searchedEvents() });
      const answer = await post('/v1/chat/completions', { model: 'claude-priced', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Weather?' }], web_search_options: {} });
      expect(answer.status).to.equal(200);
      const chunks = sseEvents(await answer.text()) as unknown as Array<{ choices: Array<{ delta: { content?: string; annotations?: unknown[] } }> }>;
      const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
      expect(deltas.map((delta) => delta.content ?? '').join('')).to.equal(ANSWER);
      const annotated = deltas.findIndex((delta) => delta.annotations !== undefined);
      expect(deltas.slice(0, annotated).map((delta) => delta.content ?? '').join('')).to.equal('In Paris today: sunny, 21 C');
      expect(deltas[annotated].annotations).to.deep.equal([{ type: 'url_citation', url_citation: { url: CITATION.url, title: CITATION.title, start_index: 16, end_index: 27 } }]);
      const charge = await chargeFor(answer);
      expect(charge.cost).to.equal(COST);
      expect(charge.held).to.equal(searchHold(100n, 3n));
    });
  });
});
