/**
 * A fake of the parts of Stripe's HTTP API Tollgate calls, started by a test on loopback: Checkout
 * Sessions (create, retrieve, expire), PaymentIntents (create off-session, retrieve with the latest
 * charge), and a checkout page a browser can pay on. Bodies arrive form-encoded with bracketed keys,
 * as Stripe's API takes them, and are parsed here, so a test sees exactly what the library sent.
 * Webhooks are built as Stripe builds events and signed with the official library's
 * `generateTestHeaderString`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export const WEBHOOK_SECRET = 'whsec_test_tollgate_fake';
export const SECRET_KEY = 'sk_test_tollgate_fake';

type Json = Record<string, any>;

/** `a[b][0][c]=1&…` → nested objects and arrays, as Stripe reads it. */
function parseForm(body: string): Json {
  const root: Json = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const path = key.split(/\[|\]\[|\]/).filter((part) => part !== '');
    let node: any = root;
    path.forEach((part, index) => {
      const last = index === path.length - 1;
      const nextIsIndex = !last && /^\d+$/.test(path[index + 1]);
      if (last) node[part] = value;
      else node = node[part] ??= nextIsIndex ? [] : {};
    });
  }
  return root;
}

function id(prefix: string): string {
  return `${prefix}_test_${randomBytes(10).toString('hex')}`;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: Json;
  readonly idempotencyKey: string | undefined;
}

export type IntentOutcome = 'succeeded' | 'declined' | 'requires_action';

export class FakeStripe {
  readonly sessions = new Map<string, Json>();
  readonly intents = new Map<string, Json>();
  readonly requests: RecordedRequest[] = [];
  /** Where the checkout page's Pay button sends its webhook (the gateway's endpoint). */
  webhookUrl = '';
  /** How the next off-session PaymentIntents end; `succeeded` by default. */
  intentOutcome: IntentOutcome = 'succeeded';
  private readonly idempotent = new Map<string, Json>();
  private readonly stripe = new Stripe(SECRET_KEY);

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeStripe> {
    let fake: FakeStripe | null = null;
    const server = createServer((req, res) => void fake!.serve(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    fake = new FakeStripe(server, `http://127.0.0.1:${port}`);
    return fake;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** The requests to one path prefix, as parsed. */
  calls(method: string, prefix: string): RecordedRequest[] {
    return this.requests.filter((request) => request.method === method && request.path.startsWith(prefix));
  }

  /** Marks a session complete: `paid` now, or `unpaid` (a delayed method) until `succeedAsync`. */
  complete(sessionId: string, paymentStatus: 'paid' | 'unpaid' = 'paid'): Json {
    const session = this.sessions.get(sessionId)!;
    session.status = 'complete';
    session.payment_status = paymentStatus;
    session.payment_intent ??= this.intentFor(session, paymentStatus === 'paid' ? 'succeeded' : 'processing').id;
    return session;
  }

  succeedAsync(sessionId: string): Json {
    const session = this.sessions.get(sessionId)!;
    session.payment_status = 'paid';
    this.intents.get(session.payment_intent)!.status = 'succeeded';
    return session;
  }

  /** A Stripe event around `object`, as the API version the library speaks writes it. */
  event(type: string, object: Json): Json {
    return { id: id('evt'), object: 'event', api_version: Stripe.API_VERSION, created: Math.floor(Date.now() / 1000), type, livemode: false, pending_webhooks: 1, data: { object: structuredClone(object) } };
  }

  /** The charge of a session's (or intent's) payment, refunded by `amountRefunded` in total. */
  refundedCharge(paymentIntentId: string, amountRefunded: number): Json {
    const intent = this.intents.get(paymentIntentId)!;
    return { id: intent.latest_charge, object: 'charge', amount: intent.amount, amount_refunded: amountRefunded, refunded: amountRefunded >= intent.amount, currency: intent.currency, payment_intent: intent.id, metadata: intent.metadata };
  }

  dispute(paymentIntentId: string, amount: number): Json {
    const intent = this.intents.get(paymentIntentId)!;
    return { id: id('dp'), object: 'dispute', amount, currency: intent.currency, charge: intent.latest_charge, payment_intent: intent.id, reason: 'fraudulent', status: 'needs_response', metadata: {} };
  }

  /** The Stripe-Signature header for `payload`, made by the official library. */
  sign(payload: string, timestamp = Math.floor(Date.now() / 1000)): string {
    return this.stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp });
  }

  /** Posts `event` to `url` signed as Stripe would; returns the status and body. */
  async deliver(url: string, event: Json, options: { timestamp?: number; body?: string } = {}): Promise<{ status: number; body: any }> {
    const payload = JSON.stringify(event, null, 2);
    const signature = this.sign(payload, options.timestamp);
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, body: options.body ?? payload });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text) };
  }

  private intentFor(session: Json, status: string): Json {
    const intent = {
      id: id('pi'),
      object: 'payment_intent',
      amount: session.amount_total,
      currency: session.currency,
      status,
      customer: session.customer,
      payment_method: id('pm'),
      metadata: session.payment_intent_data_metadata ?? {},
      latest_charge: id('ch'),
      last_payment_error: null,
    };
    this.intents.set(intent.id, intent);
    return intent;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', this.url);
    const body = req.method === 'GET' ? parseForm(url.searchParams.toString()) : parseForm(raw);
    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    this.requests.push({ method: req.method ?? '', path: url.pathname, body, idempotencyKey });
    const reply = (status: number, json: Json) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(JSON.stringify(json));
    };
    if (req.method === 'POST' && idempotencyKey !== undefined && this.idempotent.has(idempotencyKey)) return reply(200, this.idempotent.get(idempotencyKey)!);
    const remember = (json: Json) => {
      if (idempotencyKey !== undefined) this.idempotent.set(idempotencyKey, json);
      return json;
    };

    let match: RegExpExecArray | null;
    if (req.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
      const item = body.line_items[0];
      const sessionId = id('cs');
      const session = {
        id: sessionId,
        object: 'checkout.session',
        mode: body.mode,
        status: 'open',
        payment_status: 'unpaid',
        amount_total: Number(item.price_data.unit_amount) * Number(item.quantity),
        currency: item.price_data.currency,
        client_reference_id: body.client_reference_id ?? null,
        metadata: body.metadata ?? {},
        payment_intent_data_metadata: body.payment_intent_data?.metadata ?? {},
        customer: body.customer ?? id('cus'),
        payment_intent: null,
        success_url: body.success_url,
        cancel_url: body.cancel_url,
        url: `${this.url}/pay/${sessionId}`,
      };
      this.sessions.set(sessionId, session);
      return reply(200, remember(session));
    }
    if ((match = /^\/v1\/checkout\/sessions\/([^/]+)(\/expire)?$/.exec(url.pathname)) !== null) {
      const session = this.sessions.get(match[1]);
      if (session === undefined) return reply(404, { error: { type: 'invalid_request_error', message: `No such checkout.session: '${match[1]}'` } });
      if (match[2] !== undefined && req.method === 'POST') {
        if (session.status !== 'open') return reply(400, { error: { type: 'invalid_request_error', message: 'Only Checkout Sessions with a status in ["open"] can be expired.' } });
        session.status = 'expired';
      }
      return reply(200, session);
    }
    if (req.method === 'POST' && url.pathname === '/v1/payment_intents') {
      const status = this.intentOutcome === 'succeeded' ? 'succeeded' : this.intentOutcome === 'requires_action' ? 'requires_action' : 'requires_payment_method';
      const intent = {
        id: id('pi'),
        object: 'payment_intent',
        amount: Number(body.amount),
        currency: body.currency,
        status,
        customer: body.customer,
        payment_method: body.payment_method,
        metadata: body.metadata ?? {},
        latest_charge: id('ch'),
        last_payment_error: status === 'requires_payment_method' ? { code: 'card_declined', message: 'Your card was declined.' } : null,
      };
      this.intents.set(intent.id, intent);
      if (this.intentOutcome === 'declined') {
        return reply(402, { error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.', payment_intent: intent } });
      }
      if (this.intentOutcome === 'requires_action') {
        return reply(402, { error: { type: 'card_error', code: 'authentication_required', message: 'This payment requires authentication.', payment_intent: intent } });
      }
      return reply(200, remember(intent));
    }
    if (req.method === 'GET' && (match = /^\/v1\/payment_intents\/([^/]+)$/.exec(url.pathname)) !== null) {
      const intent = this.intents.get(match[1]);
      if (intent === undefined) return reply(404, { error: { type: 'invalid_request_error', message: `No such payment_intent: '${match[1]}'` } });
      const expand = Object.values<string>(body.expand ?? {});
      const charge = { id: intent.latest_charge, object: 'charge', receipt_url: `${this.url}/receipts/${intent.latest_charge}`, amount: intent.amount, currency: intent.currency };
      return reply(200, { ...intent, ...(expand.includes('latest_charge') && { latest_charge: charge }) });
    }
    if ((match = /^\/pay\/([^/]+)$/.exec(url.pathname)) !== null) return this.checkoutPage(match[1], req.method ?? 'GET', res);
    // The checkout page's browser asks for an icon; none is not an error.
    if (url.pathname === '/favicon.ico') return void res.writeHead(204).end();
    reply(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname}).` } });
  }

  /** The hosted checkout page: the amount and a Pay button; paying sends the webhook, then goes back. */
  private async checkoutPage(sessionId: string, method: string, res: ServerResponse): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (session === undefined) {
      res.writeHead(404).end('no such session');
      return;
    }
    if (method === 'POST') {
      this.complete(sessionId, 'paid');
      await this.deliver(this.webhookUrl, this.event('checkout.session.completed', session));
      res.writeHead(303, { location: session.success_url }).end();
      return;
    }
    const amount = `${(session.amount_total / 100).toFixed(2)} ${String(session.currency).toUpperCase()}`;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Fake Checkout</title><h1>Pay <span id="amount">${amount}</span></h1>
      <form method="post"><button id="pay" type="submit">Pay</button></form><a id="cancel" href="${session.cancel_url}">Cancel</a>`);
  }
}
