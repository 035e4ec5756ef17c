/** The attempt order of a model's routes: priority levels in order, a weighted draw within each. */
import { expect } from 'chai';
import type { GatewayConfig, ModelConfig, ProviderConfig, RouteTarget } from '../../src/config/types';
import { attemptOrder } from '../../src/routing/plan';

type Route = Pick<RouteTarget, 'provider' | 'priority' | 'weight'>;

function modelWith(routes: readonly Route[]): ModelConfig {
  return { id: 'm', routes: routes.map((route) => ({ ...route, upstream_model: `${route.provider}-model` })) } as unknown as ModelConfig;
}

function configFor(routes: readonly Route[]): GatewayConfig {
  const providers = Object.fromEntries(routes.map(({ provider }) => [provider, { id: provider } as ProviderConfig]));
  return { providers } as unknown as GatewayConfig;
}

/** A random source that returns `draws` in turn, and fails the test if the plan draws more. */
function drawing(...draws: number[]): () => number {
  const left = [...draws];
  return () => {
    const next = left.shift();
    if (next === undefined) throw new Error('the plan drew more random numbers than the case supplies');
    return next;
  };
}

function order(routes: readonly Route[], random: () => number): string[] {
  return attemptOrder(modelWith(routes), configFor(routes), random).map((target) => target.provider.id);
}

describe('routing/plan attemptOrder', () => {
  // One draw per route: a level of n routes draws n times (the last draw has one route left).
  const cases: ReadonlyArray<{ name: string; routes: Route[]; draws: number[]; expected: string[] }> = [
    {
      name: 'a single route',
      routes: [{ provider: 'a', priority: 0, weight: 1 }],
      draws: [0.5],
      expected: ['a'],
    },
    {
      name: 'priority levels lowest number first, whatever the order written',
      routes: [
        { provider: 'c', priority: 2, weight: 1 },
        { provider: 'a', priority: 0, weight: 1 },
        { provider: 'b', priority: 1, weight: 100 },
      ],
      draws: [0.99, 0.99, 0.99],
      expected: ['a', 'b', 'c'],
    },
    {
      name: 'weight 3 against 1: a draw in the first three quarters leads with the heavy route',
      routes: [
        { provider: 'heavy', priority: 0, weight: 3 },
        { provider: 'light', priority: 0, weight: 1 },
      ],
      draws: [0.74, 0],
      expected: ['heavy', 'light'],
    },
    {
      name: 'weight 3 against 1: a draw in the last quarter leads with the light route',
      routes: [
        { provider: 'heavy', priority: 0, weight: 3 },
        { provider: 'light', priority: 0, weight: 1 },
      ],
      draws: [0.76, 0],
      expected: ['light', 'heavy'],
    },
    {
      name: 'the draw for the second place is among the routes left',
      routes: [
        { provider: 'a', priority: 0, weight: 1 },
        { provider: 'b', priority: 0, weight: 1 },
        { provider: 'c', priority: 0, weight: 2 },
      ],
      // 0.5 of 4 lands on c; then 0.6 of 2 (a, b) lands on b.
      draws: [0.5, 0.6, 0],
      expected: ['c', 'b', 'a'],
    },
    {
      name: 'a route of weight 0 never leads while another has weight',
      routes: [
        { provider: 'standby', priority: 0, weight: 0 },
        { provider: 'main', priority: 0, weight: 1 },
      ],
      // Once the weighted route is placed, a level left with only weight 0 takes no draw.
      draws: [0],
      expected: ['main', 'standby'],
    },
    {
      name: 'a level whose weights are all 0 keeps the written order',
      routes: [
        { provider: 'x', priority: 0, weight: 0 },
        { provider: 'y', priority: 0, weight: 0 },
      ],
      draws: [],
      expected: ['x', 'y'],
    },
    {
      name: 'a failure moves to the rest of the same level before the next level',
      routes: [
        { provider: 'backup', priority: 1, weight: 1 },
        { provider: 'a', priority: 0, weight: 1 },
        { provider: 'b', priority: 0, weight: 1 },
      ],
      draws: [0.9, 0, 0],
      expected: ['b', 'a', 'backup'],
    },
  ];

  for (const { name, routes, draws, expected } of cases) {
    it(name, () => {
      expect(order(routes, drawing(...draws))).to.deep.equal(expected);
    });
  }

  it('leads with each route in proportion to its weight over evenly spread draws', () => {
    const routes: Route[] = [
      { provider: 'a', priority: 0, weight: 3 },
      { provider: 'b', priority: 0, weight: 1 },
      { provider: 'c', priority: 0, weight: 4 },
    ];
    const draws = 800;
    const leads: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < draws; i++) {
      const first = i / draws;
      leads[order(routes, drawing(first, 0, 0))[0]] += 1;
    }
    expect(leads).to.deep.equal({ a: 300, b: 100, c: 400 });
  });

  it('spreads traffic by weight with the default random source (wide bounds)', () => {
    const routes: Route[] = [
      { provider: 'heavy', priority: 0, weight: 3 },
      { provider: 'light', priority: 0, weight: 1 },
    ];
    const model = modelWith(routes);
    const config = configFor(routes);
    let heavyFirst = 0;
    const draws = 4000;
    for (let i = 0; i < draws; i++) if (attemptOrder(model, config)[0].provider.id === 'heavy') heavyFirst += 1;
    // Expected 0.75; the standard deviation over 4000 draws is under 0.007.
    expect(heavyFirst / draws).to.be.within(0.7, 0.8);
  });

  it('returns every route exactly once, with its provider', () => {
    const routes: Route[] = [
      { provider: 'a', priority: 1, weight: 2 },
      { provider: 'b', priority: 0, weight: 5 },
      { provider: 'c', priority: 1, weight: 1 },
      { provider: 'd', priority: 0, weight: 1 },
    ];
    const targets = attemptOrder(modelWith(routes), configFor(routes), drawing(0.3, 0.3, 0.3, 0.3));
    expect(targets.map((t) => t.provider.id).sort()).to.deep.equal(['a', 'b', 'c', 'd']);
    for (const target of targets) expect(target.route.provider).to.equal(target.provider.id);
  });
});
