/**
 * Builds the ordered plugin chain. Order comes from numbers in one table, never from the order of
 * lines in a file: higher priority runs further out in the onion, ties break by name (Kong's sort).
 */
import type { GatewayConfig, PluginName } from '../config/types';
import type { GatewayContext, Next } from './context';
import type { BaseKit, PluginDefinition, PluginInstance } from './plugin';
import { requestStage } from './request-stage';

/**
 * The priority bands. Metrics sits outermost so it sees every outcome (401s and 429s included); the
 * kernel reads the body right after auth so an unauthenticated client costs nothing more.
 */
export const PRIORITY = {
  metrics: 10000,
  auth: 2000,
  request: 1800,
  'rate-limit': 1500,
  billing: 1200,
  translate: 800,
  upstream: 500,
} as const;

type Handler = (ctx: GatewayContext, next: Next) => Promise<void>;

export interface Link {
  readonly name: string;
  readonly priority: number;
  readonly handle: Handler;
}

export interface Chain {
  /** Runs a request through every link; the innermost `next` resolves immediately. */
  run(ctx: GatewayContext): Promise<void>;
  /** The links in order, outermost first, for logs and tests. */
  readonly order: readonly string[];
  /** Closes the plugins, innermost first. */
  close(): Promise<void>;
  /** The set-up instance of an enabled plugin, for what reads its live state (readiness, gauges). */
  instance(name: PluginName): PluginInstance | undefined;
}

function enabledIn(config: GatewayConfig, name: PluginName): boolean {
  return config.plugins[name].enabled;
}

/** Orders links by priority (descending), then by name. */
export function orderLinks<T extends { name: string; priority: number }>(links: readonly T[]): T[] {
  return [...links].sort((a, b) => b.priority - a.priority || a.name.localeCompare(b.name));
}

/** Sets up every enabled plugin, checks their dependencies, and composes them with the kernel's stage. */
export async function buildChain<Kit extends BaseKit>(definitions: readonly PluginDefinition<PluginName, Kit>[], kit: Kit): Promise<Chain> {
  const enabled = definitions.filter((def) => enabledIn(kit.config, def.name));
  for (const def of enabled) {
    for (const dependency of def.dependsOn ?? []) {
      if (!enabled.some((other) => other.name === dependency)) {
        throw new Error(`plugin "${def.name}" needs plugin "${dependency}", which is disabled`);
      }
    }
  }

  const instances: { name: string; instance: PluginInstance }[] = [];
  for (const def of orderLinks(enabled).reverse()) {
    // Set up innermost first so a failure can close what was already set up.
    try {
      const setup = def.setup as (config: unknown, kit: Kit) => PluginInstance | Promise<PluginInstance>;
      instances.push({ name: def.name, instance: await setup(kit.config.plugins[def.name], kit) });
    } catch (err) {
      await closeAll(instances);
      throw err;
    }
  }

  const links = orderLinks<Link>([
    { name: 'request', priority: PRIORITY.request, handle: requestStage },
    ...instances.map(({ name, instance }) => ({
      name,
      priority: enabled.find((def) => def.name === name)?.priority ?? 0,
      handle: instance.handle.bind(instance),
    })),
  ]);
  return {
    order: links.map((link) => link.name),
    run: compose(links),
    close: () => closeAll(instances),
    instance: (name) => instances.find((entry) => entry.name === name)?.instance,
  };
}

/** The onion over `links`, outermost first, with koa-compose's guard against `next()` called twice. */
export function compose(links: readonly Link[]): (ctx: GatewayContext) => Promise<void> {
  const handlers = links.map((link) => link.handle);
  return function runChain(ctx) {
    let reached = -1;
    const dispatch = (i: number): Promise<void> => {
      // A plugin calling next() twice would send the request upstream twice.
      if (i <= reached) return Promise.reject(new Error(`${links[i - 1]?.name ?? 'a plugin'} called next() twice`));
      reached = i;
      return i === handlers.length ? Promise.resolve() : handlers[i](ctx, () => dispatch(i + 1));
    };
    return dispatch(0);
  };
}

async function closeAll(instances: readonly { name: string; instance: PluginInstance }[]): Promise<void> {
  for (const { instance } of instances) await instance.close?.();
}
