import { expect } from 'chai';
import { ConfigError } from '../../src/config/config-error';
import { loadConfigFile, parseConfig } from '../../src/config/load';
import { findModel } from '../../src/config/model-aliases';
import { PACKAGE_ROOT } from '../../src/paths';

function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

const PROVIDERS = ['providers:', '  anthropic:', '    protocol: anthropic', '    base_url: https://api.anthropic.com'];

function model(id: string, aliases: string): string[] {
  return [`  ${id}:`, '    family: anthropic', '    routes: [{ provider: anthropic }]', '    free: true', `    aliases: ${aliases}`];
}

function issuesOf(text: string): string[] {
  try {
    parseConfig(text, 'gateway.yaml', {});
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).message.split('\n');
  }
  throw new Error('expected a ConfigError');
}

describe('config/model-aliases', () => {
  const config = parseConfig(
    yaml(
      ...PROVIDERS,
      'models:',
      ...model('claude-opus-4-8', '["claude-opus-*", "opus"]'),
      ...model('claude-opus-5-preview', '["claude-opus-5-*"]'),
      ...model('claude-sonnet-5', '[]'),
    ),
    'gateway.yaml',
    {},
  );

  it('finds a model by its own id, which wins over any pattern', () => {
    expect(findModel(config, 'claude-opus-5-preview')?.id).to.equal('claude-opus-5-preview');
    expect(findModel(config, 'claude-opus-4-8')?.id).to.equal('claude-opus-4-8');
  });

  it('finds a model by an exact alias', () => {
    expect(findModel(config, 'opus')?.id).to.equal('claude-opus-4-8');
  });

  it('finds a model by a pattern, the longer pattern winning', () => {
    expect(findModel(config, 'claude-opus-4-9')?.id).to.equal('claude-opus-4-8');
    expect(findModel(config, 'claude-opus-5-5')?.id).to.equal('claude-opus-5-preview');
  });

  it('matches a pattern as a whole name, with regex characters taken literally', () => {
    expect(findModel(config, 'x-claude-opus-1')).to.equal(undefined);
    expect(findModel(config, 'claude-sonnet-5.1')).to.equal(undefined);
    expect(findModel(config, 'o.us')).to.equal(undefined);
  });

  it('refuses an alias that is another model\'s id', () => {
    const text = yaml(...PROVIDERS, 'models:', ...model('claude-a', '["claude-b"]'), ...model('claude-b', '[]'));
    expect(issuesOf(text).join('\n')).to.include('"claude-b" is the id of another model');
  });

  it('refuses an alias two models share', () => {
    const text = yaml(...PROVIDERS, 'models:', ...model('claude-a', '["claude-*"]'), ...model('claude-b', '["claude-*"]'));
    expect(issuesOf(text).join('\n')).to.include('"claude-*" is already an alias of model "claude-a"');
  });

  it('serves the names Claude Code sends by default with the shipped gateway.yaml', () => {
    const shipped = loadConfigFile(`${PACKAGE_ROOT}/gateway.yaml`, { ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k' });
    expect(findModel(shipped, 'claude-opus-5-5')?.id).to.equal('claude-opus-4-8');
    expect(findModel(shipped, 'claude-sonnet-5')?.id).to.equal('claude-sonnet-5');
    expect(findModel(shipped, 'claude-haiku-5-0')?.id).to.equal('claude-haiku-4-5-20251001');
    expect(findModel(shipped, 'gpt-4.1-mini')?.thinking).to.equal('none');
  });
});
