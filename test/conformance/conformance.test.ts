/**
 * The translation conformance suite: golden fixtures, one per mapping rule, under
 * test/conformance/<pair>/<kind>/<case>.json (the JSON sits beside this file in the source tree).
 *
 * - request: client body → the exact upstream body, or the 400 that names the unmappable field.
 * - reply:   a whole upstream reply → the exact client reply, and the usage reported once.
 * - stream:  an upstream SSE transcript → the exact client transcript, how it ended and the usage.
 * - error:   an upstream error reply → the client's status and error body.
 *
 * Generated ids and timestamps are the only values normalised away (to "<id>" and 0).
 */
import { UNSET_PROTOCOL_SETTINGS } from '../../src/config/derive';
import { expect } from 'chai';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelConfig, ProviderConfig } from '../../src/config/types';
import type { Json } from '../../src/json';
import { GatewayError } from '../../src/kernel/errors';
import { PACKAGE_ROOT } from '../../src/paths';
import { errorBody } from '../../src/protocols/errors';
import { SseParser } from '../../src/protocols/sse';
import { ENDPOINTS, type Endpoint } from '../../src/protocols/types';
import { translatorFor } from '../../src/translators';
import { ToolNameMap } from '../../src/translators/tool-names';
import type { TranslationContext, Translator, TranslatorPair } from '../../src/translators/types';

const FIXTURES = join(PACKAGE_ROOT, 'test', 'conformance');

const PAIRS: Readonly<Record<TranslatorPair, { endpoint: Endpoint; protocol: 'openai' | 'anthropic' }>> = {
  'chat-to-messages': { endpoint: ENDPOINTS.chat, protocol: 'anthropic' },
  'responses-to-messages': { endpoint: ENDPOINTS.responses, protocol: 'anthropic' },
  'messages-to-chat': { endpoint: ENDPOINTS.messages, protocol: 'openai' },
};

interface Fixture {
  readonly rule: string;
  readonly model?: Partial<ModelConfig>;
  readonly provider?: Partial<ProviderConfig>;
  readonly client?: Json;
  readonly upstream?: unknown;
  readonly error?: { status: number; param?: string; message_includes?: string; code?: string; details?: Json };
  readonly expected?: unknown;
  readonly end?: 'delivered' | 'failed';
  readonly usage?: Json | null;
  readonly status?: number;
  readonly headers?: Record<string, string>;
}

function context(pair: TranslatorPair, fixture: Fixture, clientBody: Json): TranslationContext {
  const anthropic = PAIRS[pair].protocol === 'anthropic';
  const model: ModelConfig = {
    id: anthropic ? 'claude-test' : 'gpt-test',
    family: anthropic ? 'anthropic' : 'openai',
    routes: [],
    free: true,
    max_output_tokens: 4096,
    thinking: 'adaptive',
    ...fixture.model,
    kind: 'text',
    image_output_tokens: {},
  };
  const provider: ProviderConfig = {
    id: anthropic ? 'anthropic' : 'openai',
    protocol: anthropic ? 'anthropic' : 'openai',
    base_url: 'http://x',
    api_key: 'k',
    ...UNSET_PROTOCOL_SETTINGS,
    headers: {},
    anthropic_version: '2023-06-01',
    timeouts: { connect_ms: 1000, first_byte_ms: 1000, idle_ms: 1000 },
    max_connections: 8,
    ...fixture.provider,
  };
  return {
    model,
    upstreamModel: anthropic ? 'claude-upstream' : 'gpt-upstream',
    provider,
    toolNames: new ToolNameMap(anthropic ? 128 : 64),
    clientBody,
    webSearchMaxUses: 5,
  };
}

/** A body the request fixture did not spell out: the smallest valid request of the client's protocol. */
function defaultClientBody(pair: TranslatorPair, stream: boolean): Json {
  const messages = [{ role: 'user', content: 'Hi' }];
  switch (pair) {
    case 'chat-to-messages':
      return { model: 'claude-test', messages, stream, ...(stream && { stream_options: { include_usage: true } }) };
    case 'responses-to-messages':
      return { model: 'claude-test', input: 'Hi', stream };
    case 'messages-to-chat':
      return { model: 'gpt-test', max_tokens: 100, messages, stream };
  }
}

const GENERATED_ID = /^(chatcmpl-|resp_|msg_|fc_|rs_|ws_)[0-9a-f]{24}$/;
const TIMESTAMPS = new Set(['created', 'created_at', 'completed_at']);

/** Replaces the ids and times the gateway generates, which differ on every run. */
function normalise(value: unknown, key = ''): unknown {
  if (typeof value === 'string' && GENERATED_ID.test(value)) return '<id>';
  if (typeof value === 'number' && TIMESTAMPS.has(key)) return 0;
  if (Array.isArray(value)) return value.map((item) => normalise(item));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalise(v, k)]));
  }
  return value;
}

/** An SSE transcript as [{event?, data}] with JSON data parsed. */
function parseTranscript(text: string): Array<{ event?: string; data: unknown }> {
  return new SseParser().push(Buffer.from(text)).map(({ event, data }) => {
    const parsed = data === '[DONE]' ? data : (JSON.parse(data) as unknown);
    return event === null ? { data: parsed } : { event, data: parsed };
  });
}

function upstreamTranscript(events: Array<{ event?: string; data: unknown }>): Array<{ event: string | null; data: string }> {
  return events.map(({ event, data }) => ({ event: event ?? null, data: typeof data === 'string' ? data : JSON.stringify(data) }));
}

function runRequest(translator: Translator, pair: TranslatorPair, fixture: Fixture): void {
  const ctx = context(pair, fixture, fixture.client!);
  if (fixture.error !== undefined) {
    let thrown: unknown;
    try {
      translator.request(ctx);
    } catch (err) {
      thrown = err;
    }
    expect(thrown, 'the request should be refused').to.be.instanceOf(GatewayError);
    const error = thrown as GatewayError;
    expect(error.status).to.equal(fixture.error.status);
    if (fixture.error.param !== undefined) expect(error.param).to.equal(fixture.error.param);
    if (fixture.error.message_includes !== undefined) expect(error.message).to.include(fixture.error.message_includes);
    if (fixture.error.code !== undefined) expect(error.spec.code).to.equal(fixture.error.code);
    if (fixture.error.details !== undefined) expect(error.details).to.deep.equal(fixture.error.details);
    return;
  }
  expect(translator.request(ctx)).to.deep.equal(fixture.upstream);
}

/** A fixture's usage with the image token kinds, which no translated pair ever reports, at 0. */
function withImageKinds(usage: Json | null): Json | null {
  return usage === null ? null : { imageInputTokens: 0, imageOutputTokens: 0, ...usage };
}

function runReply(translator: Translator, pair: TranslatorPair, fixture: Fixture): void {
  const ctx = context(pair, fixture, fixture.client ?? defaultClientBody(pair, false));
  translator.request(ctx); // fills the tool-name map exactly as a real attempt does
  const { body, usage } = translator.reply(fixture.upstream, ctx);
  expect(normalise(JSON.parse(JSON.stringify(body)))).to.deep.equal(fixture.expected);
  if (fixture.usage !== undefined) expect(usage).to.deep.equal(withImageKinds(fixture.usage));
}

function runStream(translator: Translator, pair: TranslatorPair, fixture: Fixture): void {
  const ctx = context(pair, fixture, fixture.client ?? defaultClientBody(pair, true));
  translator.request(ctx);
  const stream = translator.stream(ctx);
  let out = '';
  for (const event of upstreamTranscript(fixture.upstream as Array<{ event?: string; data: unknown }>)) out += stream.event(event);
  let end: 'delivered' | 'failed' = stream.upstreamError === null ? 'delivered' : 'failed';
  if (!stream.ended) {
    // The upstream's body ended here: exactly what the relay does on a truncated stream.
    out += stream.interrupt(new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', "The upstream provider 'test' broke off the stream."));
    end = 'failed';
  }
  expect(normalise(parseTranscript(out))).to.deep.equal(fixture.expected);
  expect(end).to.equal(fixture.end ?? 'delivered');
  if (fixture.usage !== undefined) expect(stream.usage()).to.deep.equal(withImageKinds(fixture.usage));
}

function runError(translator: Translator, pair: TranslatorPair, fixture: Fixture): void {
  const error = translator.error(fixture.status!, Buffer.from(JSON.stringify(fixture.upstream)), fixture.headers ?? {});
  const shape = PAIRS[pair].endpoint.errorShape;
  const expected = fixture.expected as { status: number; body: unknown; headers?: Record<string, string> };
  expect(error.status).to.equal(expected.status);
  expect(errorBody(error, shape)).to.deep.equal(expected.body);
  if (expected.headers !== undefined) expect(error.headers).to.deep.equal(expected.headers);
}

const RUNNERS = { request: runRequest, reply: runReply, stream: runStream, error: runError } as const;

describe('translation conformance (golden fixtures)', () => {
  for (const pair of Object.keys(PAIRS) as TranslatorPair[]) {
    describe(pair, () => {
      const { endpoint, protocol } = PAIRS[pair];
      const translator = translatorFor(endpoint, protocol);
      for (const kind of Object.keys(RUNNERS) as Array<keyof typeof RUNNERS>) {
        const dir = join(FIXTURES, pair, kind);
        if (!existsSync(dir)) continue;
        for (const file of readdirSync(dir).filter((name) => name.endsWith('.json')).sort()) {
          const fixture = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Fixture;
          it(`${kind}/${file.replace(/\.json$/, '')}: ${fixture.rule}`, () => RUNNERS[kind](translator, pair, fixture));
        }
      }
    });
  }

  it('every pair has fixtures of every kind', () => {
    for (const pair of Object.keys(PAIRS)) {
      for (const kind of Object.keys(RUNNERS)) {
        const dir = join(FIXTURES, pair, kind);
        expect(existsSync(dir) && readdirSync(dir).some((name) => name.endsWith('.json')), `${pair}/${kind}`).to.equal(true);
      }
    }
  });
});
