/**
 * Timing figures live in docs/benchmarks.md, with the date and the run they come from; a figure in a
 * code comment goes stale without anyone noticing and soon disagrees with the next one. This fails on
 * a comment in the shipped code that gives a duration in microseconds or nanoseconds.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PACKAGE_ROOT } from '../../src/paths';
import { textFiles } from './references';

/** A number followed by a microsecond or nanosecond unit. */
const FIGURE = /\d\s*(?:\u00b5s|us|ns)\b/;

/** The comment lines of a TypeScript text that carry a timing figure. */
function timedComments(text: string): number[] {
  const found: number[] = [];
  text.split('\n').forEach((line, index) => {
    const comment = /(?:\/\/|^\s*\*|\/\*)(.*)$/.exec(line);
    if (comment && FIGURE.test(comment[1])) found.push(index + 1);
  });
  return found;
}

describe('docs: no timing figures in code comments', () => {
  it('finds a figure in a line comment and in a block comment, and not in code', () => {
    expect(timedComments('// costs about 25 \u00b5s\nconst a = 1;')).to.deep.equal([1]);
    expect(timedComments('/**\n * a draw costs 7.4 us\n */')).to.deep.equal([2]);
    expect(timedComments("const label = 'median us';\nconst t = 5; // seconds")).to.deep.equal([]);
  });

  it('finds none in src, plugins or console', () => {
    const found: string[] = [];
    for (const file of textFiles(PACKAGE_ROOT, ['src', 'plugins', path.join('console', 'src')])) {
      if (!file.endsWith('.ts')) continue;
      for (const line of timedComments(readFileSync(path.join(PACKAGE_ROOT, file), 'utf8'))) found.push(`${file}:${line}`);
    }
    expect(found, 'figures belong in docs/benchmarks.md').to.deep.equal([]);
  });
});
