/**
 * Builds the ordered plugin chain. Order comes from the numbers each plugin declares, never from the
 * order of lines in a file: higher priority runs further out in the onion, ties break by name (Kong's sort).
 */
import type { GatewayConfig, PluginName } from '../config/types';
import type { GatewayContext, Next } from './context';
import type { AnyPluginDefinition, BaseKit, PluginInstance, PluginServices } from './plugin';
import { requestStage } from './request-stage';
import type { StageObserver } from './stages';

/**
 * Where the kernel's own request stage (reading and checking the body) sits among the plugins' bands:
 * right inside auth (2000), so an unauthenticated client costs nothing more, and outside rate-limit (1500).
 */
export const REQUEST_STAGE_PRIORITY = 1800;

type Handler = (ctx: GatewayContext, next: Next) => Promise<void>;

export interface Link {
  readonly name: string;
  readonly priority: number;
  readonly handle: Handler;
  /** Told the time from the link's start to its call of `next()`, when the link is timed. */
  readonly timing?: StageObserver;
}

export interface Chain {
  /** Runs a request through every link; the innermost `next` resolves immediately. */
  run(ctx: GatewayContext): Promise<void>;
  /** The links in order, outermost first, for logs and tests. */
  readonly order: readonly string[];
  /** Closes the plugins, innermost first. */
  close(): Promise<void>;
  /** The enabled plugins, outermost first (the kernel's request stage, in `order`, is not one). */
  readonly plugins: readonly PluginName[];
  /** The set-up instance of an enabled plugin, for readiness. */
  instance(name: PluginName): PluginInstance<unknown> | undefined;
  /** What an enabled plugin offers (billing's balance book, upstream's breakers…); undefined when it is disabled. */
  service<N extends keyof PluginServices>(name: N): PluginServices[N] | undefined;
}

function enabledIn(config: GatewayConfig, name: PluginName): boolean {
  return config.plugins[name].enabled;
}

/** Orders links by priority (descending), then by name. */
export function orderLinks<T extends { name: string; priority: number }>(links: readonly T[]): T[] {
  return [...links].sort((a, b) => b.priority - a.priority || a.name.localeCompare(b.name));
}

/** Sets up every enabled plugin, checks their dependencies, and composes them with the kernel's stage. */
export async function buildChain<Kit extends BaseKit>(definitions: readonly AnyPluginDefinition<Kit>[], kit: Kit): Promise<Chain> {
  const enabled = definitions.filter((def) => enabledIn(kit.config, def.name));
  for (const def of enabled) {
    for (const dependency of def.dependsOn ?? []) {
      if (!enabled.some((other) => other.name === dependency)) {
        throw new Error(`plugin "${def.name}" needs plugin "${dependency}", which is disabled`);
      }
    }
  }

  const instances: { name: PluginName; instance: PluginInstance<unknown> }[] = [];
  for (const def of orderLinks(enabled).reverse()) {
    // Set up innermost first so a failure can close what was already set up.
    try {
      instances.push({ name: def.name, instance: await def.setup(kit.config.plugins[def.name], kit) });
    } catch (err) {
      await closeAll(instances);
      throw err;
    }
  }

  const timing = (stage: AnyPluginDefinition<Kit>['stage']) => (stage === undefined ? undefined : kit.stages?.observer(stage));
  const links = orderLinks<Link>([
    { name: 'request', priority: REQUEST_STAGE_PRIORITY, handle: withAuthorization(instances.map(({ instance }) => instance).reverse()), timing: timing('parse') },
    ...instances.map(({ name, instance }) => {
      const def = enabled.find((d) => d.name === name);
      return { name, priority: def?.priority ?? 0, handle: instance.handle.bind(instance), timing: timing(def?.stage) };
    }),
  ]);
  const instanceOf = (name: PluginName) => instances.find((entry) => entry.name === name)?.instance;
  return {
    order: links.map((link) => link.name),
    plugins: orderLinks(enabled).map((def) => def.name),
    run: compose(links),
    close: () => closeAll(instances),
    instance: instanceOf,
    // The definitions' types are what PluginServices is built from (plugins/index.ts), so the service
    // an instance carries is the one its name maps to.
    service: <N extends keyof PluginServices>(name: N) => instanceOf(name)?.service as PluginServices[N] | undefined,
  };
}

/**
 * The request stage followed by every plugin's `authorize` (given outermost first), so a refusal comes
 * before any link further in takes a slot or a hold. Without one, the stage alone.
 */
function withAuthorization(instances: readonly PluginInstance<unknown>[]): Handler {
  const rules = instances.flatMap((instance) => (instance.authorize === undefined ? [] : [instance.authorize.bind(instance)]));
  if (rules.length === 0) return requestStage;
  return function requestStageAndAuthorization(ctx, next) {
    return requestStage(ctx, () => {
      for (const authorize of rules) authorize(ctx);
      return next();
    });
  };
}

/**
 * The onion over `links`, outermost first, with koa-compose's guard against `next()` called twice.
 * A timed link's inbound time is read at its start and at its `next()`: one clock read per boundary.
 */
export function compose(links: readonly Link[]): (ctx: GatewayContext) => Promise<void> {
  const handlers = links.map((link) => link.handle);
  const timings = links.map((link) => link.timing ?? null);
  return function runChain(ctx) {
    let reached = -1;
    let enteredAt = 0;
    const dispatch = (i: number): Promise<void> => {
      // A plugin calling next() twice would send the request upstream twice.
      if (i <= reached) return Promise.reject(new Error(`${links[i - 1]?.name ?? 'a plugin'} called next() twice`));
      reached = i;
      const before = i === 0 ? null : timings[i - 1];
      if (before !== null || (i < timings.length && timings[i] !== null)) {
        const now = performance.now();
        if (before !== null) before.observe((now - enteredAt) / 1000);
        enteredAt = now;
      }
      return i === handlers.length ? Promise.resolve() : handlers[i](ctx, () => dispatch(i + 1));
    };
    return dispatch(0);
  };
}

async function closeAll(instances: readonly { name: PluginName; instance: PluginInstance<unknown> }[]): Promise<void> {
  for (const { instance } of instances) await instance.close?.();
}
