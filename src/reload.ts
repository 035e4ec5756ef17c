/**
 * Hot reload of gateway.yaml. Each config in use is a generation: a frozen config, the plugin chain
 * built for it, and a count of the requests running under it. A reload validates the file, builds a
 * new generation, and swaps `runtime.current`, so new requests take the new one while running ones
 * (long streams included) finish on theirs; a replaced generation closes its chain after its last
 * request. What cannot change under a running server (the listening socket, the store, Redis) keeps
 * its running value and is reported as needing a restart.
 */
import type { Logger } from 'pino';
import { PLUGINS } from '../plugins';
import { ConfigError, formatIssue, type ConfigIssue } from './config/config-error';
import type { GatewayConfig, ServerConfig } from './config/types';
import { isObject } from './json';
import type { Runtime, RuntimeRef } from './kernel/runtime';
import { buildChain, type Chain } from './kernel/chain';
import type { GatewayContext } from './kernel/context';
import type { SettledCharges } from './billing/settled';
import type { GatewayMetrics } from './metrics/metrics';
import type { Store } from './store/store';

export type ReloadResult =
  | { readonly ok: true; readonly changes: ReloadChanges }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

interface ReloadChanges {
  /** What new requests now see, e.g. `models added: gpt-new`, `server.max_body_bytes`; empty when nothing did. */
  readonly applied: readonly string[];
  /** Fields edited in the file that keep their running values until a restart, e.g. `server.port`. */
  readonly needsRestart: readonly string[];
}

/**
 * What a running server cannot change under its clients: the listening socket, the worker processes,
 * the store and the Redis connection are opened once. Whole sections are listed by name; server fields one by one.
 */
const RESTART_ONLY_SERVER_FIELDS = ['host', 'port', 'workers'] as const;
const RESTART_ONLY_SECTIONS = ['store', 'redis', 'telemetry'] as const;

export interface ReloaderOptions {
  readonly config: GatewayConfig;
  /** The chain built for `config`; the reloader owns it from now on. */
  readonly chain: Chain;
  readonly store: Store;
  readonly logger: Logger;
  /** Shared by every chain this reloader builds, so counters keep counting across reloads. */
  readonly metrics: GatewayMetrics;
  /** Told of settled charges by every chain this reloader builds (auto-recharge). */
  readonly settled?: SettledCharges;
  /** The file to read again; without it `reload()` refuses. */
  readonly configFile?: string;
  /** Reads and validates a config file, throwing ConfigError. */
  readonly loadConfig: (file: string) => GatewayConfig;
}

/** Owns the runtime the app reads, and every generation still open. */
export class Reloader {
  /** Handed to `createApp`; `current` is swapped whole on a reload. */
  readonly runtime: RuntimeRef;
  private current: Generation;
  private readonly open = new Set<Generation>();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: ReloaderOptions) {
    this.current = new Generation(options.config, options.chain, options.logger, this.open);
    this.runtime = { current: this.current.runtime };
  }

  /**
   * Reloads the config file; calls run one after the other, each against what the previous one left.
   * `actor` (what asked: `SIGHUP` from the signal) goes in the audit log with the outcome. Never rejects.
   */
  reload(actor = 'SIGHUP'): Promise<ReloadResult> {
    const result = this.queue
      .then(() => this.apply())
      .catch((err: unknown) => this.refuse(err))
      .then(async (outcome) => {
        await this.audit(actor, outcome);
        return outcome;
      });
    this.queue = result;
    return result;
  }

  /** Appends the reload to the audit log: what applied, or where the file was wrong (paths only: a message may quote a value). */
  private async audit(actor: string, result: ReloadResult): Promise<void> {
    const after = result.ok
      ? { result: 'success', applied: result.changes.applied, needs_restart: result.changes.needsRestart }
      : { result: 'refused', issues: result.issues.length, paths: result.issues.map((issue) => issue.path).filter((path) => path !== '') };
    try {
      await this.options.store.appendAudit({
        actor,
        surface: 'server',
        action: 'config.reload',
        target: this.options.configFile ?? null,
        accountId: null,
        before: null,
        after,
        requestId: null,
      });
    } catch (err) {
      this.options.logger.error({ err }, 'audit: appending the reload entry failed');
    }
  }

  /** Refuses further reloads, waits for one under way, then closes every chain, replaced ones included. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await Promise.all([...this.open].map((generation) => generation.close()));
  }

  private async apply(): Promise<ReloadResult> {
    const { configFile, logger } = this.options;
    if (this.closed) return this.refuse('the gateway is stopping');
    if (configFile === undefined) return this.refuse('this gateway was started without a config file, so there is nothing to reload');
    let next: GatewayConfig;
    try {
      next = this.options.loadConfig(configFile);
    } catch (err) {
      return this.refuse(err);
    }
    const running = this.current.runtime.config;
    const needsRestart = restartOnlyChanges(running, next);
    const effective = keepRestartOnly(running, next);
    const applied = liveChanges(running, effective);
    let previous: Generation | undefined;
    if (applied.length > 0) {
      let chain: Chain;
      try {
        const { metrics, settled } = this.options;
        chain = await buildChain(PLUGINS, { config: effective, store: this.options.store, logger, metrics, settled, stages: metrics.stages });
      } catch (err) {
        return this.refuse(`cannot apply ${configFile}: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (this.closed) {
        await chain.close();
        return this.refuse('the gateway is stopping');
      }
      previous = this.current;
      this.current = new Generation(effective, chain, logger, this.open);
      this.runtime.current = this.current.runtime;
    }
    const what = applied.length === 0 ? 'nothing to apply' : `applied to new requests: ${applied.join('; ')}`;
    logger.info({ config: configFile, applied }, `reload: ${what}`);
    previous?.retire();
    if (needsRestart.length > 0) {
      logger.warn(
        { config: configFile, needsRestart },
        `reload: ${needsRestart.join(', ')} changed in the file but needs a restart; the running values stay in effect until then`,
      );
    }
    this.options.metrics.recordReload('success');
    return { ok: true, changes: { applied, needsRestart } };
  }

  /** Logs, on one line, every reason the reload changed nothing, and returns the result saying so. */
  private refuse(problem: unknown): ReloadResult {
    const file = this.options.configFile ?? '';
    const issues: readonly ConfigIssue[] =
      problem instanceof ConfigError
        ? problem.issues
        : [{ file, line: 0, col: 0, path: '', message: problem instanceof Error ? problem.message : String(problem) }];
    const lines = issues.map(formatIssue);
    this.options.logger.error({ config: file, issues: lines }, `reload refused, still serving the previous config:\n${lines.join('\n')}`);
    this.options.metrics.recordReload(problem instanceof ConfigError ? 'invalid' : 'failed');
    return { ok: false, issues };
  }
}

/**
 * One runtime snapshot and the requests still running under it. A request enters when the app hands
 * it to the chain (in the same tick as it reads `runtime.current`) and leaves once its response is
 * sent or abandoned and its exchange has finished: a stream outlives the middleware. A retired
 * generation closes its chain when the last request leaves.
 */
class Generation {
  readonly runtime: Runtime;
  private inFlight = 0;
  private retired = false;
  private closing: Promise<void> | null = null;

  constructor(
    config: GatewayConfig,
    private readonly chain: Chain,
    private readonly logger: Logger,
    private readonly live: Set<Generation>,
  ) {
    const tracked: Chain = {
      order: chain.order,
      plugins: chain.plugins,
      run: (ctx) => this.run(ctx),
      close: () => this.close(),
      instance: (name) => chain.instance(name),
      service: (name) => chain.service(name),
    };
    this.runtime = { config, chain: tracked };
    live.add(this);
  }

  /** Marks this generation replaced: its chain closes now if idle, else after its last request. */
  retire(): void {
    this.retired = true;
    if (this.inFlight === 0) void this.close();
  }

  /** Closes the chain once, whatever asks first (the last request, a reload or `stop`). */
  close(): Promise<void> {
    if (this.closing === null) {
      if (this.retired) this.logger.info(`reload: closing the previous plugin chain (requests still running under it: ${this.inFlight})`);
      this.closing = this.chain.close().then(
        () => void this.live.delete(this),
        (err: unknown) => {
          this.live.delete(this);
          this.logger.error({ err }, 'closing a plugin chain failed');
        },
      );
    }
    return this.closing;
  }

  private async run(ctx: GatewayContext): Promise<void> {
    this.inFlight += 1;
    try {
      await this.chain.run(ctx);
    } finally {
      void requestDone(ctx).then(() => {
        this.inFlight -= 1;
        if (this.retired && this.inFlight === 0) void this.close();
      });
    }
  }
}

/** Resolves when a request needs its chain no more: the response is sent or abandoned, the exchange finished. */
function requestDone(ctx: GatewayContext): Promise<unknown> {
  const res = ctx.res;
  const sent = res.writableFinished || res.destroyed ? undefined : new Promise<void>((resolve) => res.once('close', resolve));
  // `finished` always resolves, never rejects (kernel/context.ts).
  return Promise.all([sent, ctx.state.exchange?.finished]);
}

/** Restart-only fields whose value differs between the running config and the file; names only (URLs carry passwords). */
function restartOnlyChanges(running: GatewayConfig, next: GatewayConfig): string[] {
  const changed: string[] = RESTART_ONLY_SERVER_FIELDS.filter((field) => running.server[field] !== next.server[field]).map(
    (field) => `server.${field}`,
  );
  for (const section of RESTART_ONLY_SECTIONS) {
    changed.push(...changedFields(running[section], next[section]).map((field) => `${section}.${field}`));
  }
  return changed;
}

/** `next` with the restart-only fields of `running`: what a live reload can actually apply. */
function keepRestartOnly(running: GatewayConfig, next: GatewayConfig): GatewayConfig {
  const server: ServerConfig = Object.freeze({ ...next.server, host: running.server.host, port: running.server.port, workers: running.server.workers });
  return Object.freeze({ ...next, server, store: running.store, redis: running.redis, telemetry: running.telemetry });
}

/**
 * Fields the loader derives rather than reads from a section: where the file is, and which model limits
 * came from the catalog (a change there is the models' own, already listed under models).
 */
const DERIVED_FIELDS: ReadonlySet<string> = new Set(['source', 'catalog_limits']);

/** What differs between two configs: `server` field by field, keyed sections (models, providers, plugins) key by key. */
function liveChanges(running: GatewayConfig, next: GatewayConfig): string[] {
  const changes: string[] = [];
  for (const section of changedFields(running, next)) {
    const old = (running as unknown as Record<string, unknown>)[section];
    const now = (next as unknown as Record<string, unknown>)[section];
    if (DERIVED_FIELDS.has(section)) continue;
    if (!isObject(old) || !isObject(now)) {
      changes.push(section);
    } else if (section === 'server') {
      changes.push(...changedFields(old, now).map((field) => `server.${field}`));
    } else {
      const keys = unionKeys(old, now);
      const added = keys.filter((key) => !(key in old));
      const removed = keys.filter((key) => !(key in now));
      const changed = keys.filter((key) => key in old && key in now && !sameValue(old[key], now[key]));
      if (added.length > 0) changes.push(`${section} added: ${added.join(', ')}`);
      if (removed.length > 0) changes.push(`${section} removed: ${removed.join(', ')}`);
      if (changed.length > 0) changes.push(`${section} changed: ${changed.join(', ')}`);
    }
  }
  return changes;
}

function unionKeys(a: object, b: object): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])];
}

/** The top-level keys whose values differ between two records. */
function changedFields(a: object, b: object): string[] {
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  return unionKeys(left, right).filter((key) => !sameValue(left[key], right[key]));
}

/** Deep equality of plain config data (objects, arrays, primitives); key order does not matter. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  return unionKeys(left, right).every((key) => key in left && key in right && sameValue(left[key], right[key]));
}
