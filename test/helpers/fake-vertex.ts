/**
 * A fake Google Vertex AI on 127.0.0.1: an OAuth2 token endpoint that verifies the RS256 JWT assertion
 * of a service-account key generated here (signature, `aud` = its own URL, expiry) and issues access
 * tokens with a lifetime the test chooses, and the Anthropic publisher endpoints (`rawPredict`,
 * `streamRawPredict`, `count-tokens:rawPredict`), which refuse a missing, unknown or expired token
 * the way Google does.
 */
import { generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { JsonReply, SseReply } from './fake-upstream';
import { anthropicMessage, anthropicStream } from './upstream-replies';

/** An error in Google's shape (`{"error": {code, message, status}}`). */
interface GoogleErrorStep {
  readonly status: number;
  readonly googleStatus: string;
  readonly message: string;
}

type VertexStep = JsonReply | SseReply | GoogleErrorStep;

interface VertexRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  json<T = Record<string, unknown>>(): T;
}

export interface FakeVertex {
  readonly url: string;
  readonly tokenUri: string;
  /** The service-account key file's content (JSON), its `token_uri` pointing here. */
  readonly serviceAccountKey: string;
  /** The PEM private key in that file (to check it never reaches a log). */
  readonly privateKey: string;
  /** Model requests (token requests are counted in `tokensIssued`). */
  readonly requests: VertexRequest[];
  /** Access tokens issued so far, in order. */
  readonly tokensIssued: string[];
  /** Lifetime (`expires_in`, seconds) of the tokens issued from now on. */
  tokenLifetimeSeconds: number;
  /** Ends the life of every token issued so far. */
  expireTokens(): void;
  enqueue(...steps: VertexStep[]): void;
  close(): Promise<void>;
}

const UNAUTHENTICATED = { status: 401, googleStatus: 'UNAUTHENTICATED', message: 'Request had invalid authentication credentials. Expected OAuth 2 access token.' };

function googleError(res: ServerResponse, step: GoogleErrorStep): void {
  res.writeHead(step.status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code: step.status, message: step.message, status: step.googleStatus } }));
}

/** Whether `assertion` is a JWT signed by `publicKey` for this token endpoint, not expired. */
function assertionValid(assertion: string, publicKey: KeyObject, clientEmail: string, tokenUri: string): boolean {
  const [header, claims, signature] = assertion.split('.');
  if (signature === undefined) return false;
  const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (decode(header).alg !== 'RS256') return false;
  if (!verify('RSA-SHA256', Buffer.from(`${header}.${claims}`), publicKey, Buffer.from(signature, 'base64url'))) return false;
  const fields = decode(claims);
  const now = Math.floor(Date.now() / 1000);
  return (
    fields.iss === clientEmail &&
    fields.aud === tokenUri &&
    String(fields.scope).includes('https://www.googleapis.com/auth/cloud-platform') &&
    typeof fields.exp === 'number' &&
    fields.exp > now &&
    typeof fields.iat === 'number' &&
    fields.iat <= now + 60
  );
}

function defaultStep(path: string): VertexStep {
  if (path.endsWith('/count-tokens:rawPredict')) return { status: 200, json: { input_tokens: 42 } };
  return path.endsWith(':streamRawPredict') ? anthropicStream({ model: 'claude-on-vertex' }) : anthropicMessage({ model: 'claude-on-vertex' });
}

function play(step: VertexStep, res: ServerResponse): void {
  if ('googleStatus' in step) return googleError(res, step);
  if ('json' in step) {
    res.writeHead(step.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(step.json));
    return;
  }
  res.writeHead(step.status ?? 200, { 'content-type': 'text/event-stream' });
  for (const event of step.events) {
    if (!('data' in event)) continue;
    const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
    res.write(event.event === undefined ? `data: ${data}\n\n` : `event: ${event.event}\ndata: ${data}\n\n`);
  }
  res.end();
}

export async function startFakeVertex(): Promise<FakeVertex> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const clientEmail = 'tollgate-test@test-project.iam.gserviceaccount.com';
  const tokens = new Map<string, number>();
  const queue: VertexStep[] = [];
  const sockets = new Set<Socket>();
  let tokenUri = '';
  const fake: Omit<FakeVertex, 'url' | 'tokenUri' | 'serviceAccountKey'> = {
    privateKey: privatePem,
    requests: [],
    tokensIssued: [],
    tokenLifetimeSeconds: 3600,
    expireTokens: () => tokens.forEach((_expiry, token) => tokens.set(token, 0)),
    enqueue: (...steps) => queue.push(...steps),
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? '/';
      if (path === '/token') {
        const form = new URLSearchParams(body.toString('utf8'));
        const assertion = form.get('assertion') ?? '';
        if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer' || !assertionValid(assertion, publicKey, clientEmail, tokenUri)) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }));
          return;
        }
        const token = `ya29.test-${fake.tokensIssued.length + 1}`;
        fake.tokensIssued.push(token);
        tokens.set(token, Date.now() + fake.tokenLifetimeSeconds * 1000);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: token, expires_in: fake.tokenLifetimeSeconds, token_type: 'Bearer' }));
        return;
      }
      fake.requests.push({ path, headers: req.headers, body, json: <T>() => JSON.parse(body.toString('utf8')) as T });
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const expiry = tokens.get(bearer);
      if (expiry === undefined || expiry <= Date.now()) return googleError(res, UNAUTHENTICATED);
      play(queue.shift() ?? defaultStep(path), res);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  tokenUri = `${url}/token`;
  const serviceAccountKey = JSON.stringify({
    type: 'service_account',
    project_id: 'test-project',
    private_key_id: 'test-key-1',
    private_key: privatePem,
    client_email: clientEmail,
    token_uri: tokenUri,
  });
  return Object.assign(fake, { url, tokenUri, serviceAccountKey });
}
