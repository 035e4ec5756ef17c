/**
 * A paid (or free) request's charge, built once its exchange ended: what was billed, at which prices,
 * with what overage, and the trail (session, client, attempts) the ledger row keeps.
 */
import type { BillingPluginConfig } from '../config/types';
import type { ExchangeOutcome, ParsedRequest } from '../kernel/context';
import type { RequestReach } from '../protocols/request-reach';
import { TOKEN_KINDS } from '../protocols/types';
import type { BudgetCheck, ChargePrices, ChargeRecord } from '../store/store';
import type { ClientTrail } from './client-trail';
import type { HoldEstimate } from './hold-amount';
import { imageCharge, unreportedToolImages } from './image-billing';
import { costOf, snapshotOf, type NanoPrice } from './prices';
import { chargedLevel, routeKey, type ModelRates } from './service-levels';
import { billedTokens, reportedTokens, type BilledTokens } from './settlement';

/** What billing knows of a request from its hold to its charge. */
export interface Bill {
  readonly requestId: string;
  readonly clientRequestId: string | null;
  readonly accountId: string;
  readonly keyId: string;
  /** The organisation's member whose key made the request; null for an account's own key. */
  readonly memberAccountId: string | null;
  readonly request: ParsedRequest;
  readonly endpoint: string;
  readonly reach: RequestReach;
  readonly rates: ModelRates;
  /** What each of the model's routes costs the operator, by `routeKey`; a route without a known cost is absent. */
  readonly costs: ReadonlyMap<string, ModelRates>;
  /** What was held: admission control, not a cap (see `chargeOf`). Null for a free model. */
  readonly held: bigint | null;
  /** What the hold estimated (an unfinished image generation is charged at least that); null for a free model. */
  readonly hold: HoldEstimate | null;
  /** The budgets the hold was checked against; the charge counts in each. */
  readonly budgets: readonly BudgetCheck[];
  readonly startedAt: number;
  readonly trail: ClientTrail;
}

/**
 * The request's charge: what the upstream reported (or, without readable usage, Tollgate's own count)
 * at the model's prices, in full. The hold only decided whether to admit the request; what the upstream
 * billed above it is charged and recorded as `overage`, or under `overage: cap` left uncharged and
 * recorded as `unbilled`. Nothing is dropped silently.
 */
export async function chargeOf(bill: Bill, outcome: ExchangeOutcome | null, status: number, mode: BillingPluginConfig['overage']): Promise<ChargeRecord> {
  const now = chargeNow(bill, outcome, status, mode);
  if (now !== null) return now;
  const billed = await billedTokens(outcome, bill.request.body, bill.endpoint);
  if (bill.reach.image === undefined) return chargeFrom(bill, unreportedToolImages(billed, bill.reach.toolImage), null, outcome, status, mode);
  const image = await imageCharge(billed, chargedLevel(bill.rates, billed.tokens).card, bill.request.model, bill.reach.image, bill.request.body, bill.hold);
  return chargeFrom(bill, image.billed, image.imageKey, outcome, status, mode);
}

/**
 * The charge when nothing needs counting (the upstream reported usage, or nothing was produced) and
 * no image is priced: every plain paid request. Null when `chargeOf` must count or price images first.
 */
export function chargeNow(bill: Bill, outcome: ExchangeOutcome | null, status: number, mode: BillingPluginConfig['overage']): ChargeRecord | null {
  if (bill.reach.image !== undefined) return null;
  const billed = reportedTokens(outcome);
  return billed === null ? null : chargeFrom(bill, unreportedToolImages(billed, bill.reach.toolImage), null, outcome, status, mode);
}

function chargeFrom(bill: Bill, { tokens, source }: BilledTokens, imageKey: string | null, outcome: ExchangeOutcome | null, status: number, mode: BillingPluginConfig['overage']): ChargeRecord {
  // The reply's tier (`servedTier`) is recorded as the charge's service level, not as a token count.
  const level = chargedLevel(bill.rates, tokens);
  const images = tokens.images ?? 0;
  const usage = imageKey === null ? tokens : { ...tokens, imageKey };
  const cost = costOf(usage, level.card);
  // The same usage, by the same rules, at what the route that answered (or was last tried) costs.
  const costRates = outcome === null || outcome.provider === null ? undefined : bill.costs.get(routeKey(outcome.provider, outcome.upstreamModel ?? ''));
  const upstreamCost = costRates === undefined ? null : costOf(usage, chargedLevel(costRates, tokens).card);
  const held = bill.held ?? 0n;
  const excess = bill.held !== null && cost > held ? cost - held : 0n;
  return {
    requestId: bill.requestId,
    clientRequestId: bill.clientRequestId,
    accountId: bill.accountId,
    keyId: bill.keyId,
    model: bill.request.model.id,
    provider: outcome?.provider ?? null,
    endpoint: bill.endpoint,
    // Field by field rather than spread: a literal of one shape, where spreads (and the rest pattern that
    // took the tier out) are copied key by key on every charge.
    inputTokens: tokens.inputTokens,
    cacheWriteTokens: tokens.cacheWriteTokens,
    cacheWrite1hTokens: tokens.cacheWrite1hTokens,
    cacheReadTokens: tokens.cacheReadTokens,
    outputTokens: tokens.outputTokens,
    imageInputTokens: tokens.imageInputTokens,
    imageOutputTokens: tokens.imageOutputTokens,
    toolCalls: tokens.toolCalls,
    images,
    cost: mode === 'cap' ? cost - excess : cost,
    held,
    overage: mode === 'charge' ? excess : 0n,
    unbilled: mode === 'cap' ? excess : 0n,
    upstreamCost,
    prices: bill.held === null ? null : withImagePrice(snapshotFor(level.card), level.card, imageKey),
    serviceTier: level.serviceTier,
    longContext: level.longContext,
    usageSource: source,
    status: outcome?.status ?? status,
    outcome: outcome?.end.kind ?? 'failed',
    latencyMs: performance.now() - bill.startedAt,
    createdAt: new Date(),
    sessionId: bill.trail.sessionId,
    userAgent: bill.trail.userAgent,
    origin: bill.trail.origin,
    requestedModel: bill.trail.requestedModel,
    servedModel: outcome?.upstreamModel ?? null,
    attempts: outcome === null ? [] : outcome.attemptLog.map((attempt) => ({ provider: attempt.provider, outcome: attempt.outcome, ms: Math.round(attempt.durationMs) })),
    ttfbMs: bill.request.stream && outcome?.committedAt != null ? Math.max(0, outcome.committedAt - bill.startedAt) : null,
    ...(bill.memberAccountId !== null && { memberAccountId: bill.memberAccountId }),
  };
}

/** A per-image charge's snapshot names the one image price it was charged at. */
function withImagePrice(snapshot: ChargePrices, card: NanoPrice, imageKey: string | null): ChargePrices {
  const nano = imageKey === null ? undefined : card.perImage[imageKey];
  return nano === undefined ? snapshot : { ...snapshot, per_image: { key: imageKey!, nano: String(nano) } };
}

/** Each price's snapshot, made once per price table rather than per charge. */
const snapshots = new WeakMap<NanoPrice, ChargePrices>();

function snapshotFor(price: NanoPrice): ChargePrices {
  let snapshot = snapshots.get(price);
  if (snapshot === undefined) snapshots.set(price, (snapshot = snapshotOf(price)));
  return snapshot;
}

/** All the tokens a reply weighs when a later request references it: it is billed again as input. */
export function replyWeight(charge: ChargeRecord): number {
  return TOKEN_KINDS.reduce((sum, kind) => sum + charge[kind], 0);
}
