import path from 'node:path';
import { expect } from 'chai';
import { UNSET_PROTOCOL_SETTINGS } from '../../src/config/derive';
import { loadConfigFile } from '../../src/config/load';
import type { GatewayConfig } from '../../src/config/types';
import { PACKAGE_ROOT } from '../../src/paths';
import { DEFAULT_PLUGIN_CONFIG } from './default-plugins';

const DEFAULT_FILE = path.join(PACKAGE_ROOT, 'gateway.yaml');

describe('the default gateway.yaml', () => {
  let config: GatewayConfig;
  before(() => {
    config = loadConfigFile(DEFAULT_FILE, {});
  });

  it('loads with no environment variables set', () => {
    expect(config.source).to.equal(DEFAULT_FILE);
    expect(Object.keys(config.providers)).to.deep.equal(['anthropic', 'openai', 'echo']);
  });

  it('applies the server, store and plugin defaults', () => {
    expect(config.version).to.equal(1);
    expect(config.server).to.deep.equal({
      host: '127.0.0.1',
      port: 8080,
      max_body_bytes: 33554432,
      max_reply_bytes: 67108864,
      max_json_depth: 64,
      headers_timeout_ms: 10000,
      request_timeout_ms: 60000,
      keep_alive_timeout_ms: 65000,
      trust_proxy: false,
      trusted_proxy_hops: 1,
      websocket: true,
      websocket_idle_timeout_ms: 300000,
      metrics_token: '',
      shutdown_grace_ms: 10000,
      shutdown_unready_ms: 500,
      workers: 1,
      heap_growing_percent: 50,
      public_url: '',
    });
    expect(config.console).to.deep.equal({ enabled: true, signup: false, session_ttl_hours: 168, login_failures_per_window: 10, require_2fa: 'admins' });
    expect(config.store.url).to.equal('sqlite:./data/tollgate.db');
    // Card payments stay off, and the stripe package unloaded, unless payments.stripe is written.
    expect(config.payments).to.deep.equal({});
    expect(config.plugins).to.deep.equal(DEFAULT_PLUGIN_CONFIG);
  });

  it('applies the provider defaults and reads the keys from the environment', () => {
    expect(config.providers.openai).to.deep.equal({
      id: 'openai',
      protocol: 'openai',
      base_url: 'https://api.openai.com/v1',
      api_key: '',
      ...UNSET_PROTOCOL_SETTINGS,
      headers: {},
      anthropic_version: '2023-06-01',
      timeouts: { connect_ms: 10000, first_byte_ms: 120000, idle_ms: 300000 },
      max_connections: 128,
    });
    const withKeys = loadConfigFile(DEFAULT_FILE, { ANTHROPIC_API_KEY: 'sk-ant-x', OPENAI_API_KEY: 'sk-x' });
    expect(withKeys.providers.anthropic.api_key).to.equal('sk-ant-x');
    expect(withKeys.providers.openai.api_key).to.equal('sk-x');
  });

  it('prices the four claude models as the spec lists them (input, cache write, cache hit, output)', () => {
    const prices = Object.fromEntries(
      Object.values(config.models)
        .filter((model) => model.family === 'anthropic')
        .map((model) => {
          // The standard rates; the premium ones are checked below.
          const { tiers: _tiers, long_context: _long, betas: _betas, ...standard } = model.price!;
          return [model.id, standard];
        }),
    );
    expect(prices).to.deep.equal({
      // 1-hour cache writes at 2 × input and web search at 10 per 1,000 calls, as Anthropic bills them.
      'claude-fable-5': { input: 1.0, cache_write: 1.25, cache_write_1h: 2.0, cache_hit: 0.1, output: 5.0, tool_calls: { web_search: 10 }, image_input: 0, image_output: 0, per_image: {} },
      'claude-opus-4-8': { input: 0.5, cache_write: 0.63, cache_write_1h: 1.0, cache_hit: 0.05, output: 2.5, tool_calls: { web_search: 10 }, image_input: 0, image_output: 0, per_image: {} },
      'claude-sonnet-5': { input: 0.3, cache_write: 0.38, cache_write_1h: 0.6, cache_hit: 0.03, output: 1.5, tool_calls: { web_search: 10 }, image_input: 0, image_output: 0, per_image: {} },
      'claude-haiku-4-5-20251001': { input: 0.08, cache_write: 0.1, cache_write_1h: 0.16, cache_hit: 0.008, output: 0.4, tool_calls: { web_search: 10 }, image_input: 0, image_output: 0, per_image: {} },
    });
    for (const id of Object.keys(prices)) expect(config.models[id].routes).to.deep.equal([{ provider: 'anthropic', upstream_model: id, priority: 0, weight: 1 }]);
  });

  it('prices the premium service its models have, and no other', () => {
    const premium = Object.fromEntries(
      Object.values(config.models)
        .filter((model) => model.price !== undefined)
        .map((model) => [model.id, { tiers: Object.keys(model.price!.tiers), long: model.price!.long_context !== null, betas: model.price!.betas }]),
    );
    expect(premium).to.deep.equal({
      'claude-fable-5': { tiers: [], long: false, betas: {} },
      'claude-opus-4-8': { tiers: ['fast'], long: false, betas: {} },
      'claude-sonnet-5': { tiers: [], long: false, betas: { 'context-1m-': 'standard' } },
      'claude-haiku-4-5-20251001': { tiers: [], long: false, betas: {} },
      'gpt-5.1': { tiers: ['priority', 'flex'], long: false, betas: {} },
      'gpt-5-mini': { tiers: ['priority', 'flex'], long: false, betas: {} },
      'gpt-4.1-mini': { tiers: ['priority'], long: false, betas: {} },
      'gpt-image-1': { tiers: [], long: false, betas: {} },
      'dall-e-3': { tiers: [], long: false, betas: {} },
    });
    // OpenAI's published Priority rates for gpt-5.1 are twice its standard ones, Flex's half.
    const gpt = config.models['gpt-5.1'].price!;
    expect([gpt.tiers.priority.input, gpt.tiers.priority.cache_hit, gpt.tiers.priority.output]).to.deep.equal([2.5, 0.25, 20]);
    expect([gpt.tiers.flex.input, gpt.tiers.flex.cache_hit, gpt.tiers.flex.output]).to.deep.equal([0.625, 0.0625, 5]);
  });

  it('routes the OpenAI models to openai, each with a price', () => {
    const openai = Object.values(config.models).filter((model) => model.routes[0].provider === 'openai');
    expect(openai.map((model) => model.id)).to.include.members(['gpt-5.1', 'gpt-5-mini', 'gpt-4.1-mini']);
    for (const model of openai) {
      expect(model.family).to.equal('openai');
      expect(model.price).to.not.equal(undefined);
      // An image model's hold is its images, not a context window.
      if (model.kind === 'text') expect(model.context_window, `${model.id} context_window`).to.be.a('number');
    }
  });

  it('ships gpt-image-1 at its published token prices and dall-e-3 per image', () => {
    const image = config.models['gpt-image-1'];
    expect(image.kind).to.equal('image');
    expect(image.price).to.deep.include({ input: 5, cache_hit: 1.25, image_input: 10, image_output: 40 });
    expect(image.image_output_tokens['1024x1536/high']).to.equal(6240);
    const dalle = config.models['dall-e-3'];
    expect(dalle.kind).to.equal('image');
    expect(Object.keys(dalle.price!.per_image)[0]).to.equal('1024x1024/standard');
    expect(dalle.price!.per_image).to.deep.include({ '1024x1024/standard': 0.04, '1024x1792/hd': 0.12 });
    // The Responses image_generation tool's images are billed at the image rates on the text models that ship them.
    expect(config.models['gpt-5.1'].price).to.deep.include({ image_input: 10, image_output: 40 });
  });

  it('serves the free tollgate-echo demo model from the echo provider', () => {
    expect(config.providers.echo).to.include({ protocol: 'echo', base_url: '', api_key: '' });
    expect(config.models['tollgate-echo']).to.include({ family: 'openai', free: true });
    expect(config.models['tollgate-echo'].routes[0].provider).to.equal('echo');
  });

  it('is deeply frozen: assigning throws in strict mode', () => {
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).to.throw(TypeError);
    expect(() => {
      (config.models['claude-sonnet-5'].routes[0] as { provider: string }).provider = 'x';
    }).to.throw(TypeError);
    expect(() => {
      (config.providers as Record<string, unknown>).extra = {};
    }).to.throw(TypeError);
  });
});
