/**
 * The cells one kind of finished request moves, found once per label tuple (endpoint, model,
 * provider, status class, error code, stream, provider protocol) and then reused, so counting a
 * request builds one key and does one map lookup instead of hashing a label object per metric.
 * Each cell is resolved at its first use, so a label set shows in /metrics exactly when prom-client
 * would have shown it (a ttfb series only once a request had a first byte).
 */
import type { CellCounter, CellHistogram, HistogramCell, ValueCell } from './cells';
import { TOKEN_KINDS, type TokenKind } from '../protocols/types';

/** The `kind` label of each token kind. */
export const TOKEN_KIND_LABELS = {
  inputTokens: 'input',
  cacheWriteTokens: 'cache_write',
  cacheWrite1hTokens: 'cache_write_1h',
  cacheReadTokens: 'cache_read',
  outputTokens: 'output',
  imageInputTokens: 'image_input',
  imageOutputTokens: 'image_output',
} as const satisfies Record<TokenKind, string>;

type GenAiLabel = 'gen_ai_operation_name' | 'gen_ai_provider_name' | 'gen_ai_request_model';

/** The per-request families the cells live in. */
export interface RequestFamilies {
  readonly requests: CellCounter<'endpoint' | 'model' | 'provider' | 'status_class' | 'error_code'>;
  readonly duration: CellHistogram<'endpoint' | 'model' | 'status_class'>;
  readonly ttfb: CellHistogram<'endpoint' | 'model' | 'provider'>;
  readonly overhead: CellHistogram<'endpoint' | 'stream'>;
  readonly tokens: CellCounter<'model' | 'kind'>;
  readonly cost: CellCounter<'model'>;
  readonly genAiTokens: CellHistogram<GenAiLabel | 'gen_ai_token_type'>;
  readonly genAiTimeToFirstToken: CellHistogram<GenAiLabel>;
  readonly genAiTimePerOutputToken: CellHistogram<GenAiLabel>;
}

/** The label values of one kind of request; `genAi` is null for a request that reached no provider. */
export interface RequestLabels {
  readonly endpoint: string;
  readonly model: string;
  readonly provider: string;
  readonly statusClass: string;
  readonly errorCode: string;
  readonly stream: string;
  readonly genAi: { readonly operation: string; readonly providerName: string } | null;
}

/** Joins label values into a family key; no label value holds this character. */
const SEP = '\u0001';

export class RequestCells {
  private requestCell: ValueCell | null = null;
  private durationCell: HistogramCell | null = null;
  private ttfbCell: HistogramCell | null = null;
  private overheadCell: HistogramCell | null = null;
  private tokenCells: ValueCell[] | null = null;
  private costCell: ValueCell | null = null;
  private genAiTokenCells: readonly [HistogramCell, HistogramCell] | null = null;
  private ttftCell: HistogramCell | null = null;
  private tpotCell: HistogramCell | null = null;

  constructor(
    private readonly families: RequestFamilies,
    private readonly labels: RequestLabels,
  ) {}

  requests(): ValueCell {
    const { endpoint, model, provider, statusClass, errorCode } = this.labels;
    return (this.requestCell ??= this.families.requests.cell([endpoint, model, provider, statusClass, errorCode].join(SEP), {
      endpoint,
      model,
      provider,
      status_class: statusClass,
      error_code: errorCode,
    }));
  }

  duration(): HistogramCell {
    const { endpoint, model, statusClass } = this.labels;
    return (this.durationCell ??= this.families.duration.cell([endpoint, model, statusClass].join(SEP), { endpoint, model, status_class: statusClass }));
  }

  ttfb(): HistogramCell {
    const { endpoint, model, provider } = this.labels;
    return (this.ttfbCell ??= this.families.ttfb.cell([endpoint, model, provider].join(SEP), { endpoint, model, provider }));
  }

  overhead(): HistogramCell {
    const { endpoint, stream } = this.labels;
    return (this.overheadCell ??= this.families.overhead.cell([endpoint, stream].join(SEP), { endpoint, stream }));
  }

  /** One cell per token kind, in TOKEN_KINDS order. */
  tokens(): readonly ValueCell[] {
    const model = this.labels.model;
    return (this.tokenCells ??= TOKEN_KINDS.map((kind) => {
      const label = TOKEN_KIND_LABELS[kind];
      return this.families.tokens.cell(model + SEP + label, { model, kind: label });
    }));
  }

  cost(): ValueCell {
    const model = this.labels.model;
    return (this.costCell ??= this.families.cost.cell(model, { model }));
  }

  /** The input and output token cells of gen_ai_client_token_usage; only for a request with `genAi` labels. */
  genAiTokens(): readonly [HistogramCell, HistogramCell] {
    return (this.genAiTokenCells ??= [this.genAiTokenCell('input'), this.genAiTokenCell('output')]);
  }

  timeToFirstToken(): HistogramCell {
    return (this.ttftCell ??= this.families.genAiTimeToFirstToken.cell(this.genAiKey(), this.genAiLabels()));
  }

  timePerOutputToken(): HistogramCell {
    return (this.tpotCell ??= this.families.genAiTimePerOutputToken.cell(this.genAiKey(), this.genAiLabels()));
  }

  private genAiTokenCell(type: 'input' | 'output'): HistogramCell {
    return this.families.genAiTokens.cell(this.genAiKey() + SEP + type, { ...this.genAiLabels(), gen_ai_token_type: type });
  }

  private genAiKey(): string {
    const genAi = this.genAi();
    return [genAi.operation, genAi.providerName, this.labels.model].join(SEP);
  }

  private genAiLabels(): Record<GenAiLabel, string> {
    const genAi = this.genAi();
    return { gen_ai_operation_name: genAi.operation, gen_ai_provider_name: genAi.providerName, gen_ai_request_model: this.labels.model };
  }

  private genAi(): NonNullable<RequestLabels['genAi']> {
    if (this.labels.genAi === null) throw new Error('gen_ai metrics need a request that reached a provider');
    return this.labels.genAi;
  }
}

/** The most kinds of request kept; past it the cache starts over (the cells themselves stay in their families). */
const MAX_KINDS = 4096;

/** RequestCells by label tuple, bounded. */
export class RequestCellsCache {
  private readonly byKey = new Map<string, RequestCells>();

  constructor(private readonly families: RequestFamilies) {}

  get(labels: RequestLabels): RequestCells {
    const genAi = labels.genAi;
    const key =
      labels.endpoint + SEP + labels.model + SEP + labels.provider + SEP + labels.statusClass + SEP + labels.errorCode + SEP + labels.stream + SEP + (genAi === null ? '' : genAi.providerName);
    let cells = this.byKey.get(key);
    if (cells === undefined) {
      if (this.byKey.size >= MAX_KINDS) this.byKey.clear();
      cells = new RequestCells(this.families, labels);
      this.byKey.set(key, cells);
    }
    return cells;
  }
}
