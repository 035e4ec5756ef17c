/**
 * Every Prometheus metric Tollgate exposes, defined once. One
 * registry per gateway, never prom-client's global one, so several gateways in one process (tests,
 * benchmarks) keep apart; it is created once per gateway and outlives hot reloads, so counters keep
 * counting when a reload swaps the plugin chain. Label values are bounded: endpoints, configured
 * model ids, configured provider ids, fixed outcome words; account ids only when the operator asks.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { PaymentMetrics } from './payment-metrics';
import { LedgerMetrics } from './ledger-metrics';
import { StageMetrics } from './stage-metrics';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { CellCounter, CellGauge, CellHistogram, type ValueCell } from './cells';
import { RequestCellsCache, TOKEN_KIND_LABELS, type RequestCells } from './request-cells';
import { NANO_PER_UNIT } from '../billing/money';
import { CLIENT_CLOSED_REQUEST } from '../upstream/exchange';
import type { BreakerState } from '../upstream/breakers';
import type { CreditKind } from '../store/store';
import { inputTotal, TOKEN_KINDS, type TokenCounts } from '../protocols/types';
import { genAiOperation, genAiProviderName } from '../telemetry/gen-ai';
import type { RequestSummary } from './summary';

/** What the gauges read at scrape time from the plugin chain currently serving. */
export interface LiveView {
  /** Breaker state of each configured provider. */
  breakerStates(): ReadonlyMap<string, BreakerState>;
  /** Whether the rate limiter runs on its local fallback (Redis unreachable). */
  rateLimitDegraded(): boolean;
}

const BREAKER_VALUE: Readonly<Record<BreakerState, number>> = { closed: 0, half_open: 1, open: 2 };
const RATE_LIMIT_KIND = { requests: 'rpm', tokens: 'tpm', concurrency: 'concurrency' } as const;
const BALANCE_REASON: Readonly<Record<string, string>> = {
  TOLLGATE_ERR_INSUFFICIENT_BALANCE: 'insufficient_balance',
  TOLLGATE_ERR_KEY_SPEND_LIMIT: 'key_spend_limit',
  TOLLGATE_ERR_BUDGET_EXCEEDED: 'budget_exceeded',
  TOLLGATE_ERR_SESSION_BUDGET_EXCEEDED: 'session_budget_exceeded',
};

/** Request latencies, from a fast refusal to a long stream. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** The GenAI conventions' advised buckets: token counts (powers of 4), time to first token, time per output token. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];
const GEN_AI_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'] as const;

/** How a reload ended: applied, refused for an invalid file, or refused for another reason (stopping, a plugin failing to start). */
export type ReloadOutcome = 'success' | 'invalid' | 'failed';

/** Tollgate's own time per request: sub-millisecond to a quarter second. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

/**
 * The bounded error label of a request: Tollgate's own code when it answered with one, else what the
 * status says (an upstream's error relayed as it was, or the client leaving); '' for a success.
 */
function errorCodeLabel(summary: RequestSummary): string {
  if (summary.errorCode !== null) return summary.errorCode;
  if (summary.status === CLIENT_CLOSED_REQUEST) return 'client_closed';
  return summary.status >= 400 ? 'upstream_error' : '';
}

function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** Nano-units as units, for a float counter (Prometheus values are doubles; the ledger stays exact). */
function units(nano: bigint): number {
  return Number(nano / NANO_PER_UNIT) + Number(nano % NANO_PER_UNIT) / Number(NANO_PER_UNIT);
}

/** How finely the event loop's delay is sampled, in ms: a block shorter than this may go unseen. */
const LOOP_DELAY_RESOLUTION_MS = 10;
/** The quantiles of loop delay reported; 1 is the longest block since the last scrape. */
const LOOP_DELAY_QUANTILES: ReadonlyArray<[string, (h: IntervalHistogram) => number]> = [
  ['0.5', (h) => h.percentile(50)],
  ['0.99', (h) => h.percentile(99)],
  ['1', (h) => h.max],
];
/** Prompt tokens seen for one model on one provider: how many were read from the provider's cache. */
interface CacheCounts {
  readonly model: string;
  readonly provider: string;
  cacheRead: number;
  prompt: number;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  /** The ledger writer's backlog, refused charges and drift. */
  readonly ledger = new LedgerMetrics(this.registry);
  /** Card payments and auto-recharge. */
  readonly payments = new PaymentMetrics(this.registry);
  /** The gateway's own time per stage: the chain and the plugins time their stages into it. */
  readonly stages = new StageMetrics(this.registry);
  private readonly settleStage = this.stages.observer('settle');
  private live: LiveView | null = null;
  private scrapeSource: (() => Promise<{ body: string; contentType: string }>) | null = null;
  /** Event-loop delay since the last scrape (docs/limits.md: no request may block the loop > ~50 ms). */
  private readonly loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  /** By `model provider`; bounded by the configured models and providers. */
  private readonly cacheCounts = new Map<string, CacheCounts>();

  private readonly requests = new CellCounter({
    name: 'tollgate_requests_total',
    help: 'Requests to the API endpoints, by endpoint, model, provider that answered, status class and error code (a TOLLGATE_ERR_* code, upstream_error, client_closed, or "" for none).',
    labelNames: ['endpoint', 'model', 'provider', 'status_class', 'error_code'] as const,
    registers: [this.registry],
  });
  private readonly duration = new CellHistogram({
    name: 'tollgate_request_duration_seconds',
    help: 'From the request reaching the gateway to the end of its answer (the last byte of a stream).',
    labelNames: ['endpoint', 'model', 'status_class'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly ttfb = new CellHistogram({
    name: 'tollgate_time_to_first_byte_seconds',
    help: 'From the request reaching the gateway to the commit of an upstream answer (its first byte to the client).',
    labelNames: ['endpoint', 'model', 'provider'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly overhead = new CellHistogram({
    name: 'tollgate_gateway_overhead_seconds',
    help: "Time spent in Tollgate itself on a committed answer: the duration (plain) or time to first byte (stream) less the upstream attempts' time.",
    labelNames: ['endpoint', 'stream'] as const,
    buckets: OVERHEAD_BUCKETS,
    registers: [this.registry],
  });
  private readonly tokens = new CellCounter({
    name: 'tollgate_tokens_total',
    help: 'Tokens billed (or reported, billing off), by model and kind: input, cache_write, cache_write_1h, cache_read, output.',
    labelNames: ['model', 'kind'] as const,
    registers: [this.registry],
  });
  private readonly cost = new CellCounter({
    name: 'tollgate_cost_units_total',
    help: 'Amount charged, in currency units, by model.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly toolCalls = new Counter({
    name: 'tollgate_tool_calls_total',
    help: 'Calls of server-side tools the provider bills per call (web_search ...), by model and tool.',
    labelNames: ['model', 'tool'] as const,
    registers: [this.registry],
  });
  private readonly unpricedToolCalls = new Counter({
    name: 'tollgate_billing_unpriced_tool_calls_total',
    help: "Calls of server-side tools whose model has no price for them (price.tool_calls), so they were recorded but not charged, by model and tool.",
    labelNames: ['model', 'tool'] as const,
    registers: [this.registry],
  });
  private readonly overage = new Counter({
    name: 'tollgate_billing_overage_units_total',
    help: 'Amount charged above the hold (the upstream billed more than the request was held for; billing.overage: charge), in currency units, by model.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly unbilled = new Counter({
    name: 'tollgate_billing_unbilled_units_total',
    help: "Amount the upstream's usage cost above the hold and not charged (billing.overage: cap), in currency units, by model.",
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly attempts = new CellCounter({
    name: 'tollgate_upstream_attempts_total',
    help: 'Upstream attempts by provider and outcome: ok, connect_error, reset, timeout, invalid, aborted, status_<code>, breaker_open (skipped).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly failovers = new CellCounter({
    name: 'tollgate_failovers_total',
    help: 'Attempts after the first of a request, by the provider that failed and the one tried next (the same one for a retry).',
    labelNames: ['from_provider', 'to_provider'] as const,
    registers: [this.registry],
  });
  private readonly rateLimited = new Counter({
    name: 'tollgate_ratelimit_rejected_total',
    help: 'Requests refused with 429 by the rate limiter, by the limit that refused them: rpm, tpm, concurrency.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly balanceRejected = new Counter({
    name: 'tollgate_balance_rejected_total',
    help: 'Requests refused with 402, by reason: insufficient_balance, key_spend_limit, budget_exceeded, session_budget_exceeded.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly usageSource = new CellCounter({
    name: 'tollgate_usage_source_total',
    help: 'Billed requests by where their token counts came from: upstream, estimated, partial, none.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  private readonly consoleLogins = new Counter({
    name: 'tollgate_console_logins_total',
    help: 'Console log-in attempts by outcome: success, wrong_password, limited (refused by the wrong-password limit), disabled.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly budgetAlerts = new Counter({
    name: 'tollgate_budget_alerts_total',
    help: 'Alerts fired (each once per budget period, or once per fall below the low balance), by kind (budget, balance) and threshold (percent of the budget; "low" for the balance).',
    labelNames: ['kind', 'threshold'] as const,
    registers: [this.registry],
  });
  private readonly credited = new Counter({
    name: 'tollgate_credited_units_total',
    help: 'Funds added to balances, in currency units, by kind: redemption (Top Up), admin (credited by an administrator), topup.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly genAiTokens = new CellHistogram({
    name: 'gen_ai_client_token_usage',
    help: 'GenAI semantic conventions: tokens per request by type (input includes cache reads and writes; output). Unit {token}.',
    labelNames: [...GEN_AI_LABELS, 'gen_ai_token_type'] as const,
    buckets: TOKEN_BUCKETS,
    registers: [this.registry],
  });
  private readonly genAiTimeToFirstToken = new CellHistogram({
    name: 'gen_ai_server_time_to_first_token',
    help: 'GenAI semantic conventions: seconds from the request reaching the gateway to its first streamed event, for successful streams.',
    labelNames: GEN_AI_LABELS,
    buckets: TTFT_BUCKETS,
    registers: [this.registry],
  });
  private readonly genAiTimePerOutputToken = new CellHistogram({
    name: 'gen_ai_server_time_per_output_token',
    help: 'GenAI semantic conventions: seconds per output token after the first, for successful streams of more than one output token.',
    labelNames: GEN_AI_LABELS,
    buckets: TPOT_BUCKETS,
    registers: [this.registry],
  });
  private readonly reloads = new Counter({
    name: 'tollgate_config_reloads_total',
    help: 'Reloads of gateway.yaml by result: success, invalid (the file failed validation; the previous config stays), failed (any other refusal).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly headersDropped = new Counter({
    name: 'tollgate_upstream_headers_dropped_total',
    help: "Client headers left behind by a native upstream request (not in its protocol's table of forwarded headers), by provider protocol and header: the header's name where that table names it, else other.",
    labelNames: ['protocol', 'header'] as const,
    registers: [this.registry],
  });
  /** Moved by the span exporter when its bounded queue is full (src/telemetry). */
  readonly spansDropped = new Counter({
    name: 'tollgate_trace_spans_dropped_total',
    help: 'Finished spans dropped instead of exported because the export queue was full or an export failed.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  /** Moved by the metrics plugin as requests start and end, through inFlightCell(). */
  private readonly inFlight = new CellGauge({
    name: 'tollgate_inflight_requests',
    help: 'Requests under way on the API endpoints, streams included until their last byte.',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });
  private readonly accountRequests = new Counter({
    name: 'tollgate_account_requests_total',
    help: 'Requests by account id (only with plugins.metrics.label_accounts: true).',
    labelNames: ['account'] as const,
    registers: [this.registry],
  });
  private readonly accountTokens = new Counter({
    name: 'tollgate_account_tokens_total',
    help: 'Tokens by account id and kind (only with plugins.metrics.label_accounts: true).',
    labelNames: ['account', 'kind'] as const,
    registers: [this.registry],
  });
  private readonly accountCost = new Counter({
    name: 'tollgate_account_cost_units_total',
    help: 'Amount charged, in currency units, by account id (only with plugins.metrics.label_accounts: true).',
    labelNames: ['account'] as const,
    registers: [this.registry],
  });

  /** The per-request cells by kind of request; declared after the families it reads. */
  private readonly requestCells = new RequestCellsCache({
    requests: this.requests,
    duration: this.duration,
    ttfb: this.ttfb,
    overhead: this.overhead,
    tokens: this.tokens,
    cost: this.cost,
    genAiTokens: this.genAiTokens,
    genAiTimeToFirstToken: this.genAiTimeToFirstToken,
    genAiTimePerOutputToken: this.genAiTimePerOutputToken,
  });

  constructor(version = 'unknown') {
    const metrics = this;
    new Gauge({
      name: 'tollgate_build_info',
      aggregator: 'first',
      help: 'Always 1; the labels say which Tollgate version runs on which Node.js version.',
      labelNames: ['version', 'node'] as const,
      registers: [this.registry],
    }).set({ version, node: process.version }, 1);
    new Gauge({
      name: 'tollgate_breaker_state',
      aggregator: 'max',
      help: 'Circuit breaker state per provider: 0 closed, 1 half-open, 2 open.',
      labelNames: ['provider'] as const,
      registers: [this.registry],
      collect() {
        // Read from the chain serving now: a reload may have added, removed or rebuilt providers.
        this.reset();
        for (const [provider, state] of metrics.live?.breakerStates() ?? []) this.set({ provider }, BREAKER_VALUE[state]);
      },
    });
    new Gauge({
      name: 'tollgate_ratelimit_degraded',
      aggregator: 'max',
      help: 'Whether the rate limiter enforces local limits because Redis is unreachable (1) or not (0).',
      registers: [this.registry],
      collect() {
        this.set(metrics.live?.rateLimitDegraded() === true ? 1 : 0);
      },
    });
    this.loopDelay.enable();
    new Gauge({
      name: 'tollgate_event_loop_lag_seconds',
      aggregator: 'max',
      help: `Event-loop delay since the previous scrape, by quantile (1 = the longest block), sampled every ${LOOP_DELAY_RESOLUTION_MS} ms. Any request that blocks the loop delays every other one.`,
      labelNames: ['quantile'] as const,
      registers: [this.registry],
      collect() {
        const histogram = metrics.loopDelay;
        // Without a sample yet (a scrape right after start) the histogram reads NaN: report 0.
        for (const [quantile, read] of LOOP_DELAY_QUANTILES) {
          const ns = read(histogram);
          this.set({ quantile }, histogram.count === 0 || !Number.isFinite(ns) ? 0 : ns / 1e9);
        }
        histogram.reset();
      },
    });
    new Gauge({
      name: 'tollgate_prompt_cache_hit_ratio',
      aggregator: 'average',
      help: 'Share of prompt tokens read from the provider\'s prompt cache (cache reads / (input + cache writes + cache reads)), per model and provider, since start. Falls when a session\'s requests spread over routes.',
      labelNames: ['model', 'provider'] as const,
      registers: [this.registry],
      collect() {
        for (const counts of metrics.cacheCounts.values()) {
          if (counts.prompt > 0) this.set({ model: counts.model, provider: counts.provider }, counts.cacheRead / counts.prompt);
        }
      },
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Stops sampling the event loop (the gateway is stopping). */
  stop(): void {
    this.loopDelay.disable();
  }

  /** Adds one exchange's prompt tokens to its model and provider's cache counts. */
  private countCache(model: string, provider: string, tokens: TokenCounts): void {
    const key = `${model} ${provider}`;
    let counts = this.cacheCounts.get(key);
    if (counts === undefined) {
      counts = { model, provider, cacheRead: 0, prompt: 0 };
      this.cacheCounts.set(key, counts);
    }
    counts.cacheRead += tokens.cacheReadTokens;
    counts.prompt += inputTotal(tokens);
  }

  /** Where the scrape-time gauges read from; set once the gateway's runtime exists. */
  watch(live: LiveView): void {
    this.live = live;
  }

  /** The text exposition of every metric, and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    if (this.scrapeSource !== null) return this.scrapeSource();
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  /**
   * Answers scrapes from `source` instead of this registry: a worker of several asks the primary for
   * the whole cluster's aggregate, so a scrape landing on any one worker does not read 1/N of the counts.
   */
  scrapeThrough(source: () => Promise<{ body: string; contentType: string }>): void {
    this.scrapeSource = source;
  }

  /** Counts one console log-in attempt. */
  recordLogin(outcome: 'success' | 'wrong_password' | 'limited' | 'disabled'): void {
    this.consoleLogins.inc({ outcome });
  }

  /** Counts funds added to a balance through the console or its API. */
  recordCredit(kind: CreditKind, amount: bigint): void {
    this.credited.inc({ kind }, units(amount));
  }

  /** Counts one alert fired (by this instance: another instance's alerts count there). */
  recordBudgetAlert(kind: 'budget' | 'balance', threshold: string): void {
    this.budgetAlerts.inc({ kind, threshold });
  }

  /** Counts one reload of gateway.yaml. */
  recordReload(result: ReloadOutcome): void {
    this.reloads.inc({ result });
  }

  /** Counts the client headers one upstream request left behind; `headers` are bounded labels (`droppedHeaderLabel`). */
  recordDroppedHeaders(protocol: string, headers: readonly string[]): void {
    for (const header of headers) this.headersDropped.inc({ protocol, header });
  }

  /** The in-flight gauge cell of an endpoint, moved by the metrics plugin as requests start and end. */
  inFlightCell(endpoint: string): ValueCell {
    return this.inFlight.cell(endpoint, { endpoint });
  }

  /** Counts one finished request. */
  record(summary: RequestSummary, options: { readonly labelAccounts: boolean }): void {
    const { endpoint, model } = summary;
    const provider = summary.provider ?? '';
    const cells = this.requestCells.get({
      endpoint,
      model,
      provider,
      statusClass: statusClass(summary.status),
      errorCode: errorCodeLabel(summary),
      stream: String(summary.stream === true),
      genAi: endpoint === '' || summary.providerProtocol === null ? null : { operation: genAiOperation(endpoint), providerName: genAiProviderName(summary.providerProtocol) },
    });
    cells.requests().inc();
    cells.duration().observe(summary.durationMs / 1000);
    if (summary.ttfbMs !== null) cells.ttfb().observe(summary.ttfbMs / 1000);
    if (summary.overheadMs !== null) cells.overhead().observe(summary.overheadMs / 1000);
    if (summary.settleMs !== null) this.settleStage.observe(summary.settleMs / 1000);

    let previous: string | null = null;
    for (const attempt of summary.attemptLog) {
      this.attempts.cell(`${attempt.provider}\u0001${attempt.outcome}`, { provider: attempt.provider, outcome: attempt.outcome }).inc();
      if (attempt.outcome === 'breaker_open') continue;
      if (previous !== null) this.failovers.cell(`${previous}\u0001${attempt.provider}`, { from_provider: previous, to_provider: attempt.provider }).inc();
      previous = attempt.provider;
    }

    if (summary.tokens !== null) {
      const tokenCells = cells.tokens();
      for (let i = 0; i < TOKEN_KINDS.length; i++) tokenCells[i].inc(summary.tokens[TOKEN_KINDS[i]]);
      if (provider !== '') this.countCache(model, provider, summary.tokens);
    }
    if (summary.cost !== null) cells.cost().inc(units(summary.cost));
    for (const [tool, calls] of Object.entries(summary.toolCalls)) this.toolCalls.inc({ model, tool }, calls);
    for (const tool of summary.unpricedTools) this.unpricedToolCalls.inc({ model, tool }, summary.toolCalls[tool] ?? 0);
    if (summary.overage > 0n) this.overage.inc({ model }, units(summary.overage));
    if (summary.unbilled > 0n) this.unbilled.inc({ model }, units(summary.unbilled));
    this.recordGenAi(summary, cells);
    if (summary.usageSource !== null) this.usageSource.cell(summary.usageSource, { source: summary.usageSource }).inc();
    if (summary.status === 429 && summary.rateLimited !== null) this.rateLimited.inc({ kind: RATE_LIMIT_KIND[summary.rateLimited] });
    const reason = summary.errorCode === null ? undefined : BALANCE_REASON[summary.errorCode];
    if (reason !== undefined) this.balanceRejected.inc({ reason });

    if (options.labelAccounts && summary.accountId !== null) {
      const account = summary.accountId;
      this.accountRequests.inc({ account });
      if (summary.tokens !== null) {
        for (const kind of TOKEN_KINDS) this.accountTokens.inc({ account, kind: TOKEN_KIND_LABELS[kind] }, summary.tokens[kind]);
      }
      if (summary.cost !== null) this.accountCost.inc({ account }, units(summary.cost));
    }
  }

  /** The GenAI conventions' histograms, for requests that reached a provider. */
  private recordGenAi(summary: RequestSummary, cells: RequestCells): void {
    if (summary.endpoint === '' || summary.providerProtocol === null) return;
    const tokens = summary.tokens;
    if (tokens !== null && summary.endpoint !== 'count_tokens') {
      const [input, output] = cells.genAiTokens();
      input.observe(inputTotal(tokens));
      output.observe(tokens.outputTokens);
    }
    if (summary.stream !== true || summary.ttfbMs === null || summary.outcome !== 'delivered' || summary.status >= 400) return;
    cells.timeToFirstToken().observe(summary.ttfbMs / 1000);
    if (tokens !== null && tokens.outputTokens > 1) {
      cells.timePerOutputToken().observe((summary.durationMs - summary.ttfbMs) / 1000 / (tokens.outputTokens - 1));
    }
  }
}
