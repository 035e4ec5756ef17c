/**
 * What translating a stream costs per event, measured in-process with no network: an Anthropic
 * Messages transcript (text deltas and a tool call) pushed through each translator as raw bytes, the
 * way the relay sees it (SSE parse + read + write), against the native path's usage tap on the same bytes.
 *
 *   npm run build && node dist/bench/translation.js        (ROUNDS=… to change the sample count)
 */
import { UNSET_PROTOCOL_SETTINGS } from '../src/config/derive';
import { ToolNameMap } from '../src/translators/tool-names';
import { translatorFor, type TranslationContext } from '../src/translators';
import { SseParser, sseFrame } from '../src/protocols/sse';
import { ENDPOINTS } from '../src/protocols/types';
import { usageTapFor } from '../src/protocols/usage-tap';
import type { ModelConfig, ProviderConfig } from '../src/config/types';

const ROUNDS = Number(process.env.ROUNDS ?? 2000);
const TEXT_DELTAS = 200;

function anthropicTranscript(): { bytes: Buffer; events: number } {
  const frames: string[] = [];
  const add = (type: string, payload: object) => frames.push(sseFrame(type, JSON.stringify({ type, ...payload })));
  add('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 900, output_tokens: 1 } } });
  add('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  for (let i = 0; i < TEXT_DELTAS; i++) add('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ` word${i}` } });
  add('content_block_stop', { index: 0 });
  add('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } });
  for (const piece of ['{"query":', '"tollgate', ' benchmark"}']) add('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: piece } });
  add('content_block_stop', { index: 1 });
  add('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 230 } });
  add('message_stop', {});
  return { bytes: Buffer.from(frames.join('')), events: frames.length };
}

function chatTranscript(): { bytes: Buffer; events: number } {
  const frames: string[] = [];
  const chunk = (delta: object, finish: string | null) =>
    frames.push(sseFrame(null, JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })));
  chunk({ role: 'assistant', content: '' }, null);
  for (let i = 0; i < TEXT_DELTAS; i++) chunk({ content: ` word${i}` }, null);
  chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] }, null);
  for (const piece of ['{"query":', '"tollgate', ' benchmark"}']) chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null);
  chunk({}, 'tool_calls');
  frames.push(sseFrame(null, JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 900, completion_tokens: 230, total_tokens: 1130 } })));
  frames.push(sseFrame(null, '[DONE]'));
  return { bytes: Buffer.from(frames.join('')), events: frames.length };
}

const MODEL: ModelConfig = { id: 'client-model', family: 'anthropic', kind: 'text', image_output_tokens: {}, routes: [], free: true, max_output_tokens: 4096, thinking: 'adaptive' };
const PROVIDER: ProviderConfig = {
  id: 'p', protocol: 'anthropic', base_url: 'http://x', api_key: 'k', ...UNSET_PROTOCOL_SETTINGS, headers: {}, anthropic_version: '2023-06-01',
  timeouts: { connect_ms: 1, first_byte_ms: 1, idle_ms: 1 }, max_connections: 1,
};

function context(clientBody: Record<string, unknown>, toolNameLimit: number): TranslationContext {
  return { model: MODEL, upstreamModel: 'm', provider: PROVIDER, toolNames: new ToolNameMap(toolNameLimit), clientBody, webSearchMaxUses: 5 };
}

/** Median of per-event microseconds over ROUNDS runs of `once`, after a warm-up. */
function measure(events: number, once: () => void): { median: number; p99: number } {
  for (let i = 0; i < 200; i++) once();
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    once();
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / events);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)], p99: samples[Math.floor(samples.length * 0.99)] };
}

function translate(endpoint: keyof typeof ENDPOINTS, protocol: 'openai' | 'anthropic', bytes: Buffer, body: Record<string, unknown>) {
  const translator = translatorFor(ENDPOINTS[endpoint], protocol);
  return () => {
    const ctx = context(body, protocol === 'anthropic' ? 128 : 64);
    const stream = translator.stream(ctx);
    let out = 0;
    for (const event of new SseParser().push(bytes)) out += stream.event(event).length;
    if (out === 0) throw new Error('no output');
  };
}

function nativeTap(endpoint: 'messages' | 'chat', bytes: Buffer) {
  return () => {
    const tap = usageTapFor(endpoint);
    tap.observe(bytes);
    if (tap.result() === null) throw new Error('no usage');
  };
}

const anthropic = anthropicTranscript();
const chat = chatTranscript();
const chatBody = { model: 'client-model', messages: [], stream: true, stream_options: { include_usage: true } };
const rows: Array<[string, number, { median: number; p99: number }]> = [
  ['native Messages relay (usage tap only)', anthropic.events, measure(anthropic.events, nativeTap('messages', anthropic.bytes))],
  ['chat client ← Messages upstream', anthropic.events, measure(anthropic.events, translate('chat', 'anthropic', anthropic.bytes, chatBody))],
  ['Responses client ← Messages upstream', anthropic.events, measure(anthropic.events, translate('responses', 'anthropic', anthropic.bytes, { model: 'client-model', input: 'x', stream: true }))],
  ['native chat relay (usage tap only)', chat.events, measure(chat.events, nativeTap('chat', chat.bytes))],
  ['Messages client ← chat upstream', chat.events, measure(chat.events, translate('messages', 'openai', chat.bytes, { model: 'client-model', max_tokens: 10, messages: [], stream: true }))],
];

console.log(`Stream translation cost per upstream event (${ROUNDS} runs of a ${anthropic.events}-event transcript, Node ${process.version})\n`);
console.log('| Path | Events | Median µs/event | p99 µs/event |');
console.log('|---|---:|---:|---:|');
for (const [name, events, { median, p99 }] of rows) console.log(`| ${name} | ${events} | ${median.toFixed(2)} | ${p99.toFixed(2)} |`);
