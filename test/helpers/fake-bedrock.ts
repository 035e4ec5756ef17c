/**
 * A fake AWS Bedrock runtime on 127.0.0.1 that speaks the wire format the AWS SDKs see: it checks the
 * SigV4 signature of every request by signing it again with the official signer
 * (`@smithy/signature-v4`), answers InvokeModel with Anthropic JSON, InvokeModelWithResponseStream
 * with AWS event-stream messages encoded by `@smithy/eventstream-codec` (base64 Anthropic events in
 * `chunk` payloads), CountTokens with `{"inputTokens": n}`, and errors the way Bedrock sends them.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { EventStreamCodec, type MessageHeaders } from '@smithy/eventstream-codec';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { JsonReply, SseReply } from './fake-upstream';
import { anthropicMessage, anthropicStream } from './upstream-replies';

export const AWS_TEST_CREDENTIALS = {
  accessKeyId: 'AKIDTESTONLY0000',
  secretAccessKey: 'AWS-SECRET-SENTINEL-do-not-log',
  sessionToken: 'AWS-SESSION-SENTINEL-token',
} as const;

/** An error reply as Bedrock sends it (`x-amzn-errortype` plus `{"message": …}`). */
interface BedrockErrorStep {
  readonly status: number;
  readonly exception: string;
  readonly message: string;
}

/** A stream that breaks with an in-stream exception after `afterEvents` of `reply`'s events. */
interface BedrockStreamExceptionStep {
  readonly reply: SseReply;
  readonly afterEvents: number;
  readonly streamException: string;
  readonly message: string;
}

type BedrockStep = JsonReply | SseReply | BedrockErrorStep | BedrockStreamExceptionStep;

interface BedrockRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** Whether the SigV4 signature checked out (a request that fails is answered 403). */
  readonly signatureValid: boolean;
  json<T = Record<string, unknown>>(): T;
}

export interface FakeBedrock {
  readonly url: string;
  readonly region: string;
  readonly requests: BedrockRequest[];
  enqueue(...steps: BedrockStep[]): void;
  close(): Promise<void>;
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function stringHeaders(values: Record<string, string>): MessageHeaders {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, { type: 'string', value }]));
}

/** One `chunk` event message carrying an Anthropic event. */
export function chunkMessage(event: object): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(event)).toString('base64');
  return codec.encode({
    headers: stringHeaders({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }),
    body: fromUtf8(JSON.stringify({ bytes, p: 'abcd' })),
  });
}

/** An in-stream exception message. */
export function exceptionMessage(exception: string, message: string): Uint8Array {
  return codec.encode({
    headers: stringHeaders({ ':exception-type': exception, ':content-type': 'application/json', ':message-type': 'exception' }),
    body: fromUtf8(JSON.stringify({ message })),
  });
}

function eventsOf(reply: SseReply): object[] {
  return reply.events.flatMap((event) => ('data' in event && typeof event.data === 'object' ? [event.data] : []));
}

/** `20250102T030405Z` → a Date. */
function amzDate(value: string): Date {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (m === null) throw new Error(`bad x-amz-date ${value}`);
  return new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`);
}

/** Signs the received request again with the same credentials and date; true when the signatures agree. */
async function signatureValid(signer: SignatureV4, port: number, path: string, headers: IncomingHttpHeaders, body: Buffer): Promise<boolean> {
  const authorization = headers.authorization;
  const date = headers['x-amz-date'];
  if (typeof authorization !== 'string' || typeof date !== 'string') return false;
  const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)?.[1].split(';') ?? [];
  // The signer trusts x-amz-content-sha256 when present: check it against the body first.
  if (headers['x-amz-content-sha256'] !== createHash('sha256').update(body).digest('hex')) return false;
  const signed: Record<string, string> = {};
  for (const name of signedNames) {
    const value = headers[name];
    if (typeof value !== 'string') return false;
    signed[name] = value;
  }
  const [pathname, query = ''] = path.split('?');
  const again = await signer.sign(
    { method: 'POST', protocol: 'http:', hostname: '127.0.0.1', port, path: pathname, query: Object.fromEntries(new URLSearchParams(query)), headers: signed, body },
    { signingDate: amzDate(date) },
  );
  return again.headers.authorization === authorization;
}

function isError(step: BedrockStep): step is BedrockErrorStep {
  return 'exception' in step;
}

function isStreamException(step: BedrockStep): step is BedrockStreamExceptionStep {
  return 'streamException' in step;
}

function defaultStep(path: string): BedrockStep {
  if (path.endsWith('/count-tokens')) return { status: 200, json: { inputTokens: 42 } };
  return path.endsWith('/invoke-with-response-stream') ? anthropicStream({ model: 'claude-on-bedrock' }) : anthropicMessage({ model: 'claude-on-bedrock' });
}

function play(step: BedrockStep, res: ServerResponse): void {
  const headers = { 'x-amzn-requestid': `bedrock-${Math.random().toString(16).slice(2)}` };
  if (isError(step)) {
    res.writeHead(step.status, { ...headers, 'content-type': 'application/json', 'x-amzn-errortype': `${step.exception}:http://internal.amazon.com/coral/com.amazon.bedrock/` });
    res.end(JSON.stringify({ message: step.message }));
    return;
  }
  if ('json' in step) {
    res.writeHead(step.status, { ...headers, 'content-type': 'application/json' });
    res.end(JSON.stringify(step.json));
    return;
  }
  const reply = isStreamException(step) ? step.reply : step;
  let events = eventsOf(reply);
  const frames: Uint8Array[] = [];
  if (isStreamException(step)) events = events.slice(0, step.afterEvents);
  for (const event of events) frames.push(chunkMessage(event));
  if (isStreamException(step)) frames.push(exceptionMessage(step.streamException, step.message));
  res.writeHead(200, { ...headers, 'content-type': 'application/vnd.amazon.eventstream' });
  // Written in two uneven writes, so a message straddles reads.
  const all = Buffer.concat(frames);
  const cut = Math.floor(all.length / 3) + 5;
  res.write(all.subarray(0, cut));
  setTimeout(() => res.end(all.subarray(cut)), 5);
}

export async function startFakeBedrock(region = 'us-east-1', credentials = AWS_TEST_CREDENTIALS): Promise<FakeBedrock> {
  const signer = new SignatureV4({ service: 'bedrock', region, credentials, sha256: Hash.bind(null, 'sha256') });
  const requests: BedrockRequest[] = [];
  const queue: BedrockStep[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? '/';
      void signatureValid(signer, (server.address() as AddressInfo).port, path, req.headers, body).then((valid) => {
        requests.push({ path, headers: req.headers, body, signatureValid: valid, json: <T>() => JSON.parse(body.toString('utf8')) as T });
        if (!valid) {
          play({ status: 403, exception: 'InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided.' }, res);
          return;
        }
        play(queue.shift() ?? defaultStep(path.split('?')[0]), res);
      });
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    region,
    requests,
    enqueue: (...steps) => queue.push(...steps),
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
