/** From the name a client sends to the targets it may go to: model id, alias or `*` pattern, then routes. */
import { expect } from 'chai';
import { parseConfig } from '../../src/config/load';
import { findModel } from '../../src/config/model-aliases';
import type { ProviderProtocol } from '../../src/config/types';
import { ENDPOINTS, type EndpointId } from '../../src/protocols/types';
import { attemptOrder } from '../../src/routing/plan';
import { providerHasCredentials, speaksNatively, unservableProvider } from '../../src/routing/resolve';

const CONFIG = parseConfig(
  [
    'providers:',
    '  anthropic: { protocol: anthropic, base_url: "https://api.anthropic.com", api_key: sk-ant }',
    '  openai: { protocol: openai, base_url: "https://api.openai.com/v1", api_key: "" }',
    '  bedrock: { protocol: bedrock, region: us-east-1 }',
    '  vertex: { protocol: vertex, region: us-east5, project_id: p }',
    '  echo: { protocol: echo }',
    'models:',
    '  claude-opus-4-8:',
    '    family: anthropic',
    '    free: true',
    '    aliases: ["claude-opus-*", "opus"]',
    '    routes:',
    '      - { provider: bedrock, upstream_model: anthropic.claude-opus-4-8-v1, priority: 1 }',
    '      - { provider: anthropic, upstream_model: claude-opus-4-8-20260101 }',
    '  claude-opus-5-preview:',
    '    family: anthropic',
    '    free: true',
    '    aliases: ["claude-opus-5-*"]',
    '    routes: [{ provider: anthropic }]',
    '  gpt-x:',
    '    family: openai',
    '    free: true',
    '    routes: [{ provider: openai }]',
    '  gpt-y:',
    '    family: openai',
    '    free: true',
    '    routes: [{ provider: openai }, { provider: echo, priority: 1 }]',
    '',
  ].join('\n'),
  'gateway.yaml',
  {},
);

const OPUS_TARGETS = ['anthropic/claude-opus-4-8-20260101', 'bedrock/anthropic.claude-opus-4-8-v1'];

describe('routing/resolve', () => {
  describe('a requested name to its targets', () => {
    const cases: ReadonlyArray<{ name: string; requested: string; expected: { model: string; targets: string[] } | null }> = [
      { name: "the model's own id", requested: 'claude-opus-4-8', expected: { model: 'claude-opus-4-8', targets: OPUS_TARGETS } },
      { name: 'an exact alias', requested: 'opus', expected: { model: 'claude-opus-4-8', targets: OPUS_TARGETS } },
      { name: 'a `*` pattern', requested: 'claude-opus-4-9', expected: { model: 'claude-opus-4-8', targets: OPUS_TARGETS } },
      {
        name: 'the longer of two matching patterns; the upstream model defaults to the public id',
        requested: 'claude-opus-5-1',
        expected: { model: 'claude-opus-5-preview', targets: ['anthropic/claude-opus-5-preview'] },
      },
      { name: 'an id that a pattern also matches is the id', requested: 'claude-opus-5-preview', expected: { model: 'claude-opus-5-preview', targets: ['anthropic/claude-opus-5-preview'] } },
      { name: 'a pattern matches whole names only', requested: 'x-claude-opus-4', expected: null },
      { name: 'an unknown name', requested: 'gpt-z', expected: null },
    ];

    for (const { name, requested, expected } of cases) {
      it(name, () => {
        const model = findModel(CONFIG, requested);
        if (expected === null) return expect(model).to.equal(undefined);
        expect(model?.id).to.equal(expected.model);
        const targets = attemptOrder(model!, CONFIG, () => 0).map(({ provider, route }) => `${provider.id}/${route.upstream_model}`);
        expect(targets).to.deep.equal(expected.targets);
      });
    }
  });

  describe('speaksNatively', () => {
    const cases: ReadonlyArray<{ protocol: ProviderProtocol; native: EndpointId[] }> = [
      { protocol: 'anthropic', native: ['messages', 'count_tokens'] },
      { protocol: 'bedrock', native: ['messages', 'count_tokens'] },
      { protocol: 'vertex', native: ['messages', 'count_tokens'] },
      { protocol: 'openai', native: ['chat', 'responses', 'images'] },
      { protocol: 'echo', native: ['chat', 'responses', 'messages', 'count_tokens'] },
    ];

    for (const { protocol, native } of cases) {
      it(`${protocol} answers ${native.join(', ')} without translation, and nothing else`, () => {
        const provider = Object.values(CONFIG.providers).find((p) => p.protocol === protocol)!;
        const spoken = Object.values(ENDPOINTS).filter((endpoint) => speaksNatively(provider, endpoint)).map((endpoint) => endpoint.id);
        expect(spoken).to.have.members(native);
      });
    }
  });

  describe('credentials', () => {
    const cases: ReadonlyArray<{ name: string; provider: string; expected: boolean }> = [
      { name: 'a key provider with its key', provider: 'anthropic', expected: true },
      { name: 'a key provider whose key is empty', provider: 'openai', expected: false },
      { name: 'bedrock, whose credentials come from the AWS chain', provider: 'bedrock', expected: true },
      { name: 'vertex, whose credentials come from Google ADC', provider: 'vertex', expected: true },
      { name: 'echo, which needs none', provider: 'echo', expected: true },
    ];

    for (const { name, provider, expected } of cases) {
      it(`${expected ? 'can call' : 'cannot call'} ${name}`, () => {
        expect(providerHasCredentials(CONFIG.providers[provider])).to.equal(expected);
      });
    }

    const models: ReadonlyArray<{ name: string; model: string; expected: string | null }> = [
      { name: 'a model whose every provider lacks credentials names the first', model: 'gpt-x', expected: 'openai' },
      { name: 'one provider with credentials is enough', model: 'gpt-y', expected: null },
      { name: 'a model whose providers all have credentials', model: 'claude-opus-4-8', expected: null },
    ];

    for (const { name, model, expected } of models) {
      it(name, () => {
        expect(unservableProvider(CONFIG.models[model], CONFIG)?.id ?? null).to.equal(expected);
      });
    }
  });
});
