import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { configReference } from '../../src/config/reference';
import { PACKAGE_ROOT } from '../../src/paths';

describe('configReference', () => {
  const reference = configReference();

  it('has a row, with a meaning, for every field operators can write', () => {
    for (const field of ['server.port', 'providers.<id>.protocol', 'models.<id>.routes[].upstream_model', 'plugins.auth.cache_ttl_ms']) {
      const row = reference.split('\n').find((line) => line.startsWith(`| \`${field}\` |`));
      expect(row, field).to.not.equal(undefined);
      expect(row!.split(' | ')[3].trim(), `${field} meaning`).to.not.equal('|');
    }
  });

  it('is the reference docs/configuration.md shows (regenerate with `npx tollgate config reference`)', () => {
    const page = readFileSync(path.join(PACKAGE_ROOT, 'docs', 'configuration.md'), 'utf8');
    const start = page.indexOf('<!-- config-reference:start -->\n') + '<!-- config-reference:start -->\n'.length;
    const end = page.indexOf('\n<!-- config-reference:end -->');
    expect(page.slice(start, end)).to.equal(reference);
  });
});
