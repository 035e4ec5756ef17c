import { expect } from 'chai';
import { ConfigError } from '../../src/config/config-error';
import { parseConfig } from '../../src/config/load';
import { DEFAULT_PLUGIN_CONFIG } from './default-plugins';

/** Joins lines into a YAML document, so a case's line numbers can be counted in the source. */
function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

/** The lines of the ConfigError that parsing `text` throws. */
function issuesOf(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(text, 'gateway.yaml', env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).message.split('\n');
  }
  throw new Error('expected a ConfigError');
}

// Two real providers and nothing else, for cases about models.
const PROVIDERS = [
  'providers:',
  '  anthropic:',
  '    protocol: anthropic',
  '    base_url: https://api.anthropic.com',
  '  openai:',
  '    protocol: openai',
  '    base_url: https://api.openai.com/v1',
];

interface InvalidCase {
  readonly name: string;
  readonly text: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly expected: readonly string[];
}

const INVALID: readonly InvalidCase[] = [
  {
    name: 'a route naming an unknown provider',
    text: yaml(...PROVIDERS, 'models:', '  claude-sonnet-5:', '    family: anthropic', '    routes:', '      - provider: anthropc', '    price: { input: 0.30, output: 1.50 }', '    max_output_tokens: 64000', '    context_window: 200000'),
    expected: ['gateway.yaml:12:19 models.claude-sonnet-5.routes[0].provider: unknown provider "anthropc" (known: anthropic, openai)'],
  },
  {
    name: 'a priced beta needing a tier the price does not define',
    text: yaml(...PROVIDERS, 'models:', '  claude-sonnet-5:', '    family: anthropic', '    routes: [{ provider: anthropic }]', '    price:', '      input: 0.30', '      output: 1.50', '      tiers: { fast: { input: 1.8, output: 9 } }', '      betas:', '        turbo-: fastest', '    max_output_tokens: 64000', '    context_window: 200000'),
    expected: ['gateway.yaml:17:17 models.claude-sonnet-5.price.betas.turbo-: "fastest" must be long_context, standard, refuse or a tier of this model\'s price.tiers (fast)'],
  },
  {
    name: 'a misspelt field of a service tier',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    family: openai', '    routes: [{ provider: openai }]', '    price:', '      input: 1.25', '      output: 10', '      tiers:', '        priority: { input: 2.5, ouput: 20 }', '    max_output_tokens: 128000', '    context_window: 400000'),
    expected: ['gateway.yaml:16:33 models.gpt-5.1.price.tiers.priority.ouput: unknown field "ouput" (did you mean "output"?)'],
  },
  {
    name: 'a misspelt field of the statements section',
    text: yaml('providers: {}', 'models: {}', 'plugins:', '  billing:', '    statements:', '      name: Example Ltd', '      tax_di: GB123'),
    expected: ['gateway.yaml:7:7 plugins.billing.statements.tax_di: unknown field "tax_di" (did you mean "tax_id"?)'],
  },
  {
    name: 'an unknown field close to a known one (did you mean)',
    text: yaml('providers:', '  openai:', '    protocl: openai', '    base_url: https://api.openai.com/v1', 'models: {}'),
    expected: ['gateway.yaml:3:5 providers.openai.protocl: unknown field "protocl" (did you mean "protocol"?)'],
  },
  {
    name: 'an unknown field far from every known one (known list)',
    text: yaml('server:', '  colour: blue', 'providers: {}', 'models: {}'),
    expected: [
      'gateway.yaml:2:3 server.colour: unknown field "colour" (known: headers_timeout_ms, heap_growing_percent, host, keep_alive_timeout_ms, max_body_bytes, max_json_depth, max_reply_bytes, metrics_token, port, public_url, request_timeout_ms, shutdown_grace_ms, shutdown_unready_ms, trust_proxy, trusted_proxy_hops, websocket, websocket_idle_timeout_ms, workers)',
    ],
  },
  {
    name: 'an unknown top-level field',
    text: yaml('provider: {}', 'providers: {}', 'models: {}'),
    expected: ['gateway.yaml:1:1 provider: unknown field "provider" (did you mean "providers"?)'],
  },
  {
    name: 'an unknown plugin',
    text: yaml('providers: {}', 'models: {}', 'plugins:', '  foo: {}'),
    expected: ['gateway.yaml:4:3 plugins.foo: unknown plugin "foo" (known: auth, billing, metrics, rate-limit, translate, upstream)'],
  },
  {
    name: 'a model with neither price nor free',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    family: openai', '    routes: [{ provider: openai }]'),
    expected: ['gateway.yaml:10:5 models.gpt-5.1: model "gpt-5.1" needs a price (input and output per 1M tokens) or free: true'],
  },
  {
    name: 'a priced model without the limits its hold needs, which the catalog does not know',
    text: yaml(...PROVIDERS, 'models:', '  house-model:', '    family: openai', '    routes: [{ provider: openai }]', '    price: { input: 1, output: 2 }'),
    expected: [
      'gateway.yaml:10:5 models.house-model: a priced model needs context_window: the most input one request can have, which billing holds when the billed input is not in the body (previous_response_id, file_id, server tools), and the catalog has none for it',
      'gateway.yaml:10:5 models.house-model: a priced model needs max_output_tokens: the most output one answer can have, which billing holds for a request that sets no limit, and the catalog has none for it',
    ],
  },
  {
    // The catalog's gpt-5.1 has a context window (genai-prices) but no output limit (models.dev's data predates it).
    name: 'a priced model whose output limit neither the file nor the catalog has',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    family: openai', '    routes: [{ provider: openai }]', '    price: { input: 1, output: 2 }'),
    expected: [
      'gateway.yaml:10:5 models.gpt-5.1: a priced model needs max_output_tokens: the most output one answer can have, which billing holds for a request that sets no limit, and the catalog has none for it',
    ],
  },
  {
    name: 'an image model routed to a provider that does not speak the Images API',
    text: yaml(...PROVIDERS, 'models:', '  img:', '    family: openai', '    kind: image', '    routes: [{ provider: anthropic }]', '    price: { image_output: 40 }'),
    expected: ['gateway.yaml:12:26 models.img.routes[0].provider: an image model is served on /v1/images/generations by openai-protocol providers only; "anthropic" speaks Anthropic Messages'],
  },
  {
    name: 'an image model priced with neither image_output nor per_image',
    text: yaml(...PROVIDERS, 'models:', '  img:', '    family: openai', '    kind: image', '    routes: [{ provider: openai }]', '    price: { input: 5 }'),
    expected: ['gateway.yaml:13:12 models.img.price: an image model\'s price needs image_output (per 1M image tokens, with input and image_input) or per_image (per image by "size/quality")'],
  },
  {
    name: 'a text model priced without output, or per image',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    family: openai', '    routes: [{ provider: openai }]', '    price: { input: 1, per_image: { "1024x1024/standard": 0.04 } }', '    max_output_tokens: 4096', '    context_window: 200000'),
    expected: [
      "gateway.yaml:12:12 models.gpt-5.1.price: a text model's price needs output (per 1M tokens)",
      'gateway.yaml:12:35 models.gpt-5.1.price.per_image: per_image prices an image model: add kind: image, or remove per_image',
    ],
  },
  {
    name: 'a model with both price and free',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    family: openai', '    routes: [{ provider: openai }]', '    price: { input: 1, output: 2 }', '    free: true', '    max_output_tokens: 4096', '    context_window: 200000'),
    expected: ['gateway.yaml:10:5 models.gpt-5.1: price and free: true contradict each other: keep one'],
  },
  {
    name: 'an unset environment variable without default',
    text: yaml('providers:', '  openai:', '    protocol: openai', '    base_url: https://api.openai.com/v1', '    api_key: ${OPENAI_API_KEY}', 'models: {}'),
    expected: ['gateway.yaml:5:14 providers.openai.api_key: environment variable "OPENAI_API_KEY" is not set (write ${OPENAI_API_KEY:-} to allow it empty)'],
  },
  {
    name: 'an unset variable, without the knock-on schema error for its empty value',
    text: yaml('providers:', '  openai:', '    protocol: openai', '    base_url: ${OPENAI_BASE_URL}', 'models: {}'),
    expected: ['gateway.yaml:4:15 providers.openai.base_url: environment variable "OPENAI_BASE_URL" is not set (write ${OPENAI_BASE_URL:-} to allow it empty)'],
  },
  {
    name: 'a malformed substitution',
    text: yaml('store:', '  url: sqlite:${DATA DIR}/x.db', 'providers: {}', 'models: {}'),
    expected: ['gateway.yaml:2:8 store.url: invalid substitution "${DATA DIR}": write ${NAME} or ${NAME:-default}, or $${ for a literal ${'],
  },
  {
    name: 'a YAML syntax error',
    text: yaml('server:', '  port: 1', ' host: x', 'providers: {}', 'models: {}'),
    expected: ['gateway.yaml:3:1 YAML syntax: All mapping items must start at the same column'],
  },
  {
    name: 'an unclosed flow mapping',
    text: yaml('providers: {}', 'models: { a: 1', 'plugins: {}'),
    expected: [
      'gateway.yaml:3:1 YAML syntax: Flow map in block collection must be sufficiently indented and end with a }',
    ],
  },
  {
    name: 'a second document',
    text: yaml('providers: {}', 'models: {}', '---', 'server: {}'),
    expected: ['gateway.yaml:3:1 YAML syntax: the file must hold a single document: remove the "---" separator'],
  },
  {
    name: 'an alias bomb, without expanding it',
    text: yaml(
      'providers: {}',
      'models: {}',
      'a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
    ),
    expected: ['gateway.yaml:1:1 YAML: Excessive alias count indicates a resource exhaustion attack'],
  },
  {
    name: 'a duplicate key',
    text: yaml('server:', '  port: 8080', '  host: 0.0.0.0', '  port: 9090', 'providers: {}', 'models: {}'),
    expected: ['gateway.yaml:4:3 server.port: duplicate key "port" (first at line 2)'],
  },
  {
    name: 'a value of the wrong type',
    text: yaml('server:', '  port: 80a', 'providers: {}', 'models: {}'),
    expected: ['gateway.yaml:2:9 server.port: expected integer, got string "80a"'],
  },
  {
    name: 'an empty value where a mapping belongs',
    text: yaml('providers:', '  openai:', 'models: {}'),
    expected: ['gateway.yaml:2:10 providers.openai: expected mapping, got an empty value'],
  },
  {
    name: 'a value outside an enum',
    text: yaml('providers:', '  openai:', '    protocol: opnai', '    base_url: https://api.openai.com/v1', 'models: {}'),
    expected: ['gateway.yaml:3:15 providers.openai.protocol: must be one of openai, anthropic, bedrock, vertex, echo; got string "opnai"'],
  },
  {
    name: 'a number out of range',
    text: yaml('server:', '  port: 70000', 'providers: {}', 'models: {}'),
    expected: ['gateway.yaml:2:9 server.port: must be at most 65535, got number 70000'],
  },
  {
    name: 'a missing required field, at its parent mapping',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    routes: [{ provider: openai }]', '    free: true'),
    expected: ['gateway.yaml:10:5 models.gpt-5.1: missing required field "family"'],
  },
  {
    name: 'an empty routes list',
    text: yaml(...PROVIDERS, 'models:', '  gpt-5.1:', '    family: openai', '    routes: []', '    free: true'),
    expected: ['gateway.yaml:11:13 models.gpt-5.1.routes: must list at least 1 item, got 0'],
  },
  {
    name: 'an invalid provider id',
    text: yaml('providers:', '  OpenAI:', '    protocol: openai', '    base_url: https://api.openai.com/v1', 'models: {}'),
    expected: ['gateway.yaml:2:3 providers.OpenAI: invalid provider id "OpenAI": use lower-case letters, digits, ".", "_" and "-", starting with a letter or digit'],
  },
  {
    name: 'a header value with a line break',
    text: yaml('providers:', '  openai:', '    protocol: openai', '    base_url: https://api.openai.com/v1', '    headers:', '      X-Team: "a\\r\\nX-Evil: 1"', 'models: {}'),
    expected: ['gateway.yaml:6:15 providers.openai.headers.X-Team: must not contain a line break (CR or LF), got string "a\\r\\nX-Evil: 1"'],
  },
  {
    name: 'an echo provider with a base_url and an api_key',
    text: yaml('providers:', '  echo:', '    protocol: echo', '    base_url: http://localhost:9999', '    api_key: sk-demo', 'models: {}'),
    expected: [
      'gateway.yaml:4:15 providers.echo.base_url: echo answers locally and takes neither base_url nor api_key: remove this field',
      'gateway.yaml:5:14 providers.echo.api_key: echo answers locally and takes neither base_url nor api_key: remove this field',
    ],
  },
  {
    name: 'a non-echo provider without base_url',
    text: yaml('providers:', '  openai:', '    protocol: openai', 'models: {}'),
    expected: ['gateway.yaml:3:5 providers.openai: missing required field "base_url" (only echo providers go without one)'],
  },
  {
    name: 'a base_url that is not an absolute http(s) URL',
    text: yaml('providers:', '  a:', '    protocol: openai', '    base_url: api.openai.com/v1', '  b:', '    protocol: anthropic', '    base_url: https://api.anthropic.com/?x=1', 'models: {}'),
    expected: [
      'gateway.yaml:4:15 providers.a.base_url: must be an absolute http:// or https:// URL without query or fragment, got "api.openai.com/v1"',
      'gateway.yaml:7:15 providers.b.base_url: must be an absolute http:// or https:// URL without query or fragment, got "https://api.anthropic.com/?x=1"',
    ],
  },
  {
    name: 'several problems at once, in file order',
    text: yaml('version: 2', 'server:', '  port: "8080"', 'providers: {}', 'models: {}', 'plugins:', '  upstream: { enabled: false }'),
    expected: [
      'gateway.yaml:1:10 version: must be 1, got number 2',
      'gateway.yaml:3:9 server.port: expected integer, got string "8080"',
      'gateway.yaml:7:24 plugins.upstream.enabled: must be true, got boolean false',
    ],
  },
  {
    name: 'a document that is not a mapping',
    text: yaml('- providers'),
    expected: ['gateway.yaml:1:1 expected mapping, got a list'],
  },
];

describe('config/load parseConfig', () => {
  describe('rejects invalid configs with exact messages', () => {
    for (const { name, text, env, expected } of INVALID) {
      it(`reports ${name}`, () => {
        expect(issuesOf(text, env)).to.deep.equal(expected);
      });
    }
  });

  it('exposes each issue with file, line, col, path and message', () => {
    try {
      parseConfig(yaml('server:', '  port: 80a', 'providers: {}', 'models: {}'), 'conf/gw.yaml', {});
      expect.fail('expected a ConfigError');
    } catch (err) {
      expect((err as ConfigError).issues).to.deep.equal([
        { file: 'conf/gw.yaml', line: 2, col: 9, path: 'server.port', message: 'expected integer, got string "80a"' },
      ]);
    }
  });

  it('uses a variable\'s default when the variable is unset', () => {
    const text = yaml(...PROVIDERS.slice(0, 4), '    api_key: ${ANTHROPIC_API_KEY:-}', '    anthropic_version: ${AV:-2024-01-01}', 'models: {}');
    const config = parseConfig(text, 'gateway.yaml', {});
    expect(config.providers.anthropic.api_key).to.equal('');
    expect(config.providers.anthropic.anthropic_version).to.equal('2024-01-01');
  });

  it('uses the variable over its default when set', () => {
    const text = yaml(...PROVIDERS.slice(0, 4), '    api_key: ${ANTHROPIC_API_KEY:-}', 'models: {}');
    expect(parseConfig(text, 'gateway.yaml', { ANTHROPIC_API_KEY: 'sk-ant-1' }).providers.anthropic.api_key).to.equal('sk-ant-1');
  });

  it('reads $${ as a literal ${', () => {
    const text = yaml(...PROVIDERS.slice(0, 4), '    headers:', '      X-Template: "$${NOT_A_VAR} and $${X:-y}"', 'models: {}');
    expect(parseConfig(text, 'gateway.yaml', {}).providers.anthropic.headers).to.deep.equal({ 'X-Template': '${NOT_A_VAR} and ${X:-y}' });
  });

  it('turns a plain scalar made of one ${...} into a YAML number', () => {
    const text = yaml('server:', '  port: ${PORT:-8080}', '  max_json_depth: ${DEPTH}', 'providers: {}', 'models: {}');
    const config = parseConfig(text, 'gateway.yaml', { DEPTH: '32' });
    expect(config.server.port).to.equal(8080);
    expect(config.server.max_json_depth).to.equal(32);
  });

  it('keeps a quoted ${...} a string, so a quoted port is a type error', () => {
    const text = yaml('server:', '  port: "${PORT:-8080}"', 'providers: {}', 'models: {}');
    expect(issuesOf(text)).to.deep.equal(['gateway.yaml:2:9 server.port: expected integer, got string "8080"']);
  });

  it('takes server.workers as a count or "auto", 1 by default, and says so in one line when it is neither', () => {
    expect(parseConfig(yaml('providers: {}', 'models: {}'), 'gateway.yaml', {}).server.workers).to.equal(1);
    expect(parseConfig(yaml('server:', '  workers: 4', 'providers: {}', 'models: {}'), 'gateway.yaml', {}).server.workers).to.equal(4);
    expect(parseConfig(yaml('server:', '  workers: auto', 'providers: {}', 'models: {}'), 'gateway.yaml', {}).server.workers).to.equal('auto');
    for (const [value, shown] of [['0', 'number 0'], ['two', 'string "two"'], ['1.5', 'number 1.5']]) {
      expect(issuesOf(yaml('server:', `  workers: ${value}`, 'providers: {}', 'models: {}'))).to.deep.equal([
        `gateway.yaml:2:12 server.workers: expected integer of at least 1 or "auto", got ${shown}`,
      ]);
    }
  });

  it('fills derived fields: ids, upstream_model and cache prices', () => {
    const text = yaml(
      ...PROVIDERS,
      'models:',
      '  gpt-5.1:',
      '    family: openai',
      '    routes:',
      '      - provider: openai',
      '      - { provider: anthropic, upstream_model: claude-sonnet-5, priority: 1, weight: 3 }',
      '    price: { input: 1.25, cache_hit: 0.125, output: 10 }',
      '    max_output_tokens: 128000',
      '    context_window: 400000',
    );
    const config = parseConfig(text, 'gateway.yaml', {});
    expect(config.providers.openai.id).to.equal('openai');
    expect(config.models['gpt-5.1']).to.deep.equal({
      id: 'gpt-5.1',
      family: 'openai',
      routes: [
        { provider: 'openai', upstream_model: 'gpt-5.1', priority: 0, weight: 1 },
        { provider: 'anthropic', upstream_model: 'claude-sonnet-5', priority: 1, weight: 3 },
      ],
      // An OpenAI model reports no 1-hour cache writes: they default to its cache-write price.
      // No tiers, no long-context rates, no priced betas of its own: premium service is refused.
      kind: 'text',
      image_output_tokens: {},
      price: { input: 1.25, cache_write: 1.25, cache_write_1h: 1.25, cache_hit: 0.125, output: 10, image_input: 0, image_output: 0, tool_calls: {}, long_context: null, tiers: {}, betas: {}, per_image: {} },
      free: false,
      max_output_tokens: 128000,
      context_window: 400000,
      thinking: 'adaptive',
      aliases: [],
    });
  });

  it('drops one trailing slash from base_url', () => {
    const text = yaml('providers:', '  openai:', '    protocol: openai', '    base_url: https://api.openai.com/v1/', 'models: {}');
    expect(parseConfig(text, 'gateway.yaml', {}).providers.openai.base_url).to.equal('https://api.openai.com/v1');
  });

  it('accepts an echo provider with neither base_url nor api_key, and gives it an empty base_url', () => {
    const text = yaml('providers:', '  echo:', '    protocol: echo', 'models:', '  tollgate-echo:', '    family: openai', '    routes: [{ provider: echo }]', '    free: true');
    const config = parseConfig(text, 'gateway.yaml', {});
    expect(config.providers.echo).to.include({ id: 'echo', protocol: 'echo', base_url: '', api_key: '' });
    expect(config.models['tollgate-echo']).to.include({ free: true });
    expect(config.models['tollgate-echo'].price).to.equal(undefined);
  });

  it('applies every section default to a config with only providers and models', () => {
    const config = parseConfig(yaml('providers: {}', 'models: {}'), 'gateway.yaml', {});
    expect(config.version).to.equal(1);
    expect(config.store).to.deep.equal({ url: 'sqlite:./data/tollgate.db', connect_timeout_ms: 2000, statement_timeout_ms: 5000, pool_size: 10 });
    expect(config.redis).to.deep.equal({ url: '', key_prefix: 'tollgate:', command_timeout_ms: 500 });
    expect(config.plugins).to.deep.equal(DEFAULT_PLUGIN_CONFIG);
  });

  it('records the source it was given', () => {
    expect(parseConfig(yaml('providers: {}', 'models: {}'), 'etc/tollgate.yaml', {}).source).to.equal('etc/tollgate.yaml');
  });
});
