import { Readable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { PLUGINS } from '../../plugins';
import type { UpstreamService } from '../../plugins/upstream';
import type { GatewayConfig } from '../../src/config/types';
import { buildChain, compose, orderLinks, REQUEST_STAGE_PRIORITY } from '../../src/kernel/chain';
import { parseConfig } from '../../src/config/load';
import type { GatewayContext } from '../../src/kernel/context';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginDefinition } from '../../src/kernel/plugin';
import { GatewayMetrics } from '../../src/metrics/metrics';
import { ENDPOINTS } from '../../src/protocols/types';
import type { Store } from '../../src/store/store';

const logger = pino({ level: 'silent' });

function kitWith(enabled: Record<string, boolean>) {
  const plugins = Object.fromEntries(Object.entries(enabled).map(([name, on]) => [name, { enabled: on }]));
  return { config: { plugins } as unknown as GatewayConfig, store: {} as Store, logger, metrics: new GatewayMetrics() };
}

function recorder(name: 'auth' | 'upstream', priority: number, log: string[], extra: Partial<PluginDefinition> = {}) {
  return {
    name,
    priority,
    ...extra,
    setup: () => ({
      service: undefined,
      async handle(_ctx: GatewayContext, next: () => Promise<void>) {
        log.push(`${name} in`);
        await next();
        log.push(`${name} out`);
      },
      async close() {
        log.push(`${name} closed`);
      },
    }),
  } as PluginDefinition;
}

const REQUEST_CONFIG = parseConfig(
  `
version: 1
store: { url: "sqlite::memory:" }
providers:
  openai: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  auth: { enabled: true }
  billing: { enabled: true }
`,
  'chain-test.yaml',
  {},
);

/** A chat request the kernel's request stage can read: its body in a stream, as a socket would give it. */
function requestContext(): GatewayContext {
  const body = Buffer.from(JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }));
  const req = Object.assign(Readable.from([body]), { headers: { 'content-length': String(body.length) }, complete: true });
  return { req, state: { requestId: 'req_chain', clientRequestId: null, config: REQUEST_CONFIG, endpoint: ENDPOINTS.chat }, get: () => '' } as unknown as GatewayContext;
}

describe('orderLinks', () => {
  it('puts higher priority outside and breaks ties by name', () => {
    const order = orderLinks([
      { name: 'b', priority: 1 },
      { name: 'c', priority: 5 },
      { name: 'a', priority: 1 },
    ]).map((link) => link.name);
    expect(order).to.deep.equal(['c', 'a', 'b']);
  });
});

describe('buildChain', () => {
  it('runs plugins as an onion around the kernel request stage, by priority', async () => {
    const log: string[] = [];
    const chain = await buildChain(
      [recorder('upstream', 500, log), recorder('auth', 2000, log)],
      kitWith({ auth: true, upstream: true }),
    );
    expect(chain.order).to.deep.equal(['auth', 'request', 'upstream']);
  });

  it('skips disabled plugins and refuses a missing dependency', async () => {
    const log: string[] = [];
    const defs = [recorder('auth', 2000, log), recorder('upstream', 500, log, { dependsOn: ['auth'] })];
    let message = '';
    try {
      await buildChain(defs, kitWith({ auth: false, upstream: true }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).to.equal('plugin "upstream" needs plugin "auth", which is disabled');
  });

  it('closes plugins innermost first', async () => {
    const log: string[] = [];
    const chain = await buildChain(
      [recorder('auth', 2000, log), recorder('upstream', 500, log)],
      kitWith({ auth: true, upstream: true }),
    );
    await chain.close();
    expect(log).to.deep.equal(['upstream closed', 'auth closed']);
  });

  it("runs each plugin's authorize right after the request stage, outermost first, before any inner link", async () => {
    const log: string[] = [];
    const authorizing = (name: 'auth' | 'billing', priority: number, refuse = false) =>
      ({
        name,
        priority,
        setup: () => ({
          service: undefined,
          async handle(_ctx: GatewayContext, next: () => Promise<void>) {
            log.push(`${name} in`);
            await next();
          },
          authorize(ctx: GatewayContext) {
            log.push(`${name} authorizes ${ctx.state.request?.model.id}`);
            if (refuse) throw new GatewayError('TOLLGATE_ERR_MODEL_NOT_ALLOWED', 'no');
          },
        }),
      }) as PluginDefinition;
    const run = async (refuse: boolean) => {
      log.length = 0;
      const chain = await buildChain([authorizing('auth', 2000), authorizing('billing', 1200, refuse), recorder('upstream', 500, log)], {
        ...kitWith({ auth: true, billing: true, upstream: true }),
        config: REQUEST_CONFIG,
      });
      await chain.run(requestContext()).catch((err: unknown) => log.push((err as GatewayError).code));
    };
    await run(false);
    expect(log).to.deep.equal(['auth in', 'auth authorizes gpt-test', 'billing authorizes gpt-test', 'billing in', 'upstream in', 'upstream out']);
    await run(true);
    expect(log).to.deep.equal(['auth in', 'auth authorizes gpt-test', 'billing authorizes gpt-test', 'TOLLGATE_ERR_MODEL_NOT_ALLOWED']);
  });

  it('offers each enabled plugin\'s service by name, and none for a disabled one', async () => {
    const breakers: UpstreamService = { breakerStates: () => new Map([['openai', 'open']]), providerHealth: () => new Map() };
    const upstream: PluginDefinition<'upstream', UpstreamService> = {
      name: 'upstream',
      priority: 500,
      setup: () => ({ service: breakers, handle: async () => undefined }),
    };
    const chain = await buildChain([upstream, recorder('auth', 2000, [])], kitWith({ auth: false, upstream: true }));
    expect(chain.service('upstream')?.breakerStates().get('openai')).to.equal('open');
    expect(chain.service('auth')).to.equal(undefined);
    expect(chain.instance('auth')).to.equal(undefined);
    expect(chain.plugins).to.deep.equal(['upstream']);
  });
});

describe('the shipped plugins', () => {
  it('declare priorities that put them in the documented order around the request stage', () => {
    const order = orderLinks([...PLUGINS, { name: 'request', priority: REQUEST_STAGE_PRIORITY }]).map((link) => link.name);
    expect(order).to.deep.equal(['metrics', 'auth', 'request', 'rate-limit', 'billing', 'translate', 'upstream']);
  });
});

describe('compose', () => {
  it('rejects a link that calls next() twice, naming it', async () => {
    const calls: string[] = [];
    const run = compose([
      {
        name: 'greedy',
        priority: 2,
        async handle(_ctx, next) {
          await next();
          await next();
        },
      },
      {
        name: 'inner',
        priority: 1,
        async handle() {
          calls.push('inner');
        },
      },
    ]);
    let message = '';
    try {
      await run({} as GatewayContext);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).to.equal('greedy called next() twice');
    expect(calls).to.deep.equal(['inner']);
  });
});
