/**
 * What the cloud providers add to each request, measured in-process with no network: SigV4 signing
 * of a Bedrock request (canonical request, SHA-256 of the body, HMAC chain; static credentials), the
 * Vertex access-token lookup once a token is cached, and, for scale, setting an API key header. Also
 * the per-event cost of reading a Bedrock event-stream against parsing the same events as SSE. Each
 * auth figure includes building the request object (about the baseline's cost).
 *
 *   npm run build && node dist/bench/provider-auth.js        (ROUNDS=… to change the sample count)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { UNSET_PROTOCOL_SETTINGS } from '../src/config/derive';
import type { ProviderConfig } from '../src/config/types';
import { BedrockEventStreamParser } from '../src/providers/bedrock/event-stream';
import { bedrockSigner } from '../src/providers/bedrock/signer';
import { GoogleTokenSource } from '../src/providers/vertex/token-source';
import { SseParser, sseFrame } from '../src/protocols/sse';
import type { OutgoingRequest, RequestAuthenticator } from '../src/wire/types';

const ROUNDS = Number(process.env.ROUNDS ?? 20000);
const BODY_BYTES = [1024, 32 * 1024];

const PROVIDER: ProviderConfig = {
  id: 'bench',
  protocol: 'bedrock',
  base_url: 'https://bedrock-runtime.us-east-1.amazonaws.com',
  api_key: 'sk-bench-0123456789',
  ...UNSET_PROTOCOL_SETTINGS,
  region: 'us-east-1',
  access_key_id: 'AKIDBENCH',
  secret_access_key: 'bench-secret',
  headers: {},
  anthropic_version: '2023-06-01',
  timeouts: { connect_ms: 1000, first_byte_ms: 1000, idle_ms: 1000 },
  max_connections: 1,
};

function request(bodyBytes: number): OutgoingRequest {
  return {
    origin: 'https://bedrock-runtime.us-east-1.amazonaws.com',
    path: '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'identity', 'x-request-id': 'req_bench', 'user-agent': 'bench' },
    body: Buffer.alloc(bodyBytes, 'a'),
  };
}

/** Median and p99 of one async operation, in µs. */
async function measure(operation: () => unknown): Promise<{ median: number; p99: number }> {
  for (let i = 0; i < 200; i++) await operation();
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    await operation();
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)], p99: samples[Math.floor(samples.length * 0.99)] };
}

function authenticate(authenticator: RequestAuthenticator, bodyBytes: number): () => unknown {
  return () => authenticator.authenticate(request(bodyBytes));
}

async function tokenSource(): Promise<{ tokens: GoogleTokenSource; close(): Promise<void> }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: 'ya29.bench', expires_in: 3600 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  const tokens = new GoogleTokenSource({ describe: 'bench', tokenRequest: () => ({ url, method: 'POST', headers: {}, body: '' }) });
  await tokens.token();
  return { tokens, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function streams(events: number): { eventStream: Buffer; sse: Buffer } {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  const bin: Uint8Array[] = [];
  let sse = '';
  for (let i = 0; i < events; i++) {
    const event = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ` word${i}` } });
    const payload = JSON.stringify({ bytes: Buffer.from(event).toString('base64') });
    bin.push(codec.encode({ headers: { ':event-type': { type: 'string', value: 'chunk' }, ':message-type': { type: 'string', value: 'event' } }, body: fromUtf8(payload) }));
    sse += sseFrame('content_block_delta', event);
  }
  return { eventStream: Buffer.concat(bin), sse: Buffer.from(sse) };
}

async function main(): Promise<void> {
  const rows: Array<[string, { median: number; p99: number }]> = [];
  const signer = bedrockSigner(PROVIDER);
  for (const size of BODY_BYTES) rows.push([`SigV4 sign, ${size / 1024} KiB body`, await measure(authenticate(signer, size))]);
  const google = await tokenSource();
  rows.push(['Vertex token lookup (cached)', await measure(() => google.tokens.token())]);
  await google.close();
  rows.push(['API key header (baseline)', await measure(() => (request(1024).headers['x-api-key'] = PROVIDER.api_key))]);

  const EVENTS = 200;
  const { eventStream, sse } = streams(EVENTS);
  const perEvent = (result: { median: number; p99: number }) => ({ median: result.median / EVENTS, p99: result.p99 / EVENTS });
  rows.push(['Bedrock event-stream read, per event', perEvent(await measure(() => new BedrockEventStreamParser().push(eventStream)))]);
  rows.push(['SSE parse, per event (baseline)', perEvent(await measure(() => new SseParser().push(sse)))]);

  console.log(`provider auth and framing, ${ROUNDS} rounds each (µs)`);
  console.log('| operation | median µs | p99 µs |\n|---|---|---|');
  for (const [name, { median, p99 }] of rows) console.log(`| ${name} | ${median.toFixed(2)} | ${p99.toFixed(2)} |`);
}

void main();
