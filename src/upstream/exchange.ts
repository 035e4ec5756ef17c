/**
 * The bookkeeping every upstream attempt shares, native or translated: one AbortController aborted
 * when the client goes away, and the exchange's `finished` promise, settled exactly once with how the
 * exchange ended and its usage.
 */
import type { ExchangeEnd, ExchangeOutcome, GatewayContext } from '../kernel/context';
import type { Usage } from '../protocols/types';
import type { Target } from '../routing/resolve';
import { isAbort, upstreamFailure } from './failures';

/** nginx's status for a request whose client closed the connection first; it only reaches logs. */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * Settles the exchange: how it ended, the usage seen, the status the client got (ctx.status by
 * default) and a reader of the output text relayed.
 */
export type EndExchange = (end: ExchangeEnd, usage?: Usage | null, status?: number, outputText?: () => string) => void;

const NOTHING_RELAYED = (): string => '';

export interface OpenExchange {
  readonly signal: AbortSignal;
  readonly end: EndExchange;
}

/** Usage of an exchange that did not end delivered counts only what was produced: it is partial. */
function usageFor(end: ExchangeEnd, usage: Usage | null): Usage | null {
  if (usage === null || end.kind === 'delivered') return usage;
  return { ...usage, source: 'partial' };
}

/** Opens the exchange for one attempt at `target` and publishes it as `ctx.state.exchange`. */
export function openExchange(ctx: GatewayContext, { provider, route }: Target): OpenExchange {
  let settle!: (outcome: ExchangeOutcome) => void;
  const finished = new Promise<ExchangeOutcome>((resolve) => (settle = resolve));
  ctx.state.exchange = { provider: provider.id, upstreamModel: route.upstream_model, finished };

  const attempt = new AbortController();
  const onClientGone = () => {
    if (!ctx.res.writableFinished) attempt.abort();
  };
  ctx.res.once('close', onClientGone);
  const end: EndExchange = (kind, usage = null, status = ctx.status, outputText = NOTHING_RELAYED) => {
    ctx.res.off('close', onClientGone);
    settle({ end: kind, status, provider: provider.id, usage: usageFor(kind, usage), outputText });
  };
  return { signal: attempt.signal, end };
}

/**
 * Ends an attempt that threw before its answer was decided. A client that left gets nothing (nobody
 * is there); anything else becomes the client-safe GatewayError, which is thrown for the kernel to render.
 */
export function failExchange(ctx: GatewayContext, err: unknown, { signal, end }: OpenExchange, providerId: string): void {
  if (signal.aborted && isAbort(err)) {
    ctx.status = CLIENT_CLOSED_REQUEST;
    end({ kind: 'aborted' });
    return;
  }
  const failure = upstreamFailure(err, providerId);
  end({ kind: 'failed', error: failure }, null, failure.status);
  throw failure;
}
