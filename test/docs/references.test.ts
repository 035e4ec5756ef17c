/**
 * The repository stands alone: every path it names from its root, and every Markdown link, leads to
 * a file in it and to a section that file has; nothing points at the documents Tollgate was first
 * written from. The checker is tried on bad samples first, so a checker that finds nothing fails
 * (references: made-up paths, in those samples).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PACKAGE_ROOT } from '../../src/paths';
import { SAMPLES_MARKER, anchorsOf, referenceProblems, repositoryAt, slug, textFiles, type Repository } from './references';

const SCANNED = ['src', 'plugins', 'test', 'bench', 'console', 'docs', 'README.md', 'scripts', 'deploy'];

/** A repository of two files, for the checker's own tests. */
const SAMPLE: Repository = {
  exists: (relative) => ['docs', 'docs/decisions.md', 'src', 'src/app.ts'].includes(relative),
  anchors: (relative) => (relative === 'docs/decisions.md' ? new Set(['d2-native-requests-pass-through', 'f15']) : new Set()),
  hasFileNamed: (name) => ['decisions.md', 'app.ts'].includes(name),
};

function reasons(file: string, text: string): string[] {
  return referenceProblems(file, text, SAMPLE).map((problem) => `${problem.line}: ${problem.reference}: ${problem.why}`);
}

describe('docs: references', () => {
  describe('the checker', () => {
    it('makes GitHub anchors of headings, and reads <a id> anchors', () => {
      expect(slug('D2. Native requests pass through')).to.equal('d2-native-requests-pass-through');
      expect(slug("D6. anthropic-version is the client's")).to.equal('d6-anthropic-version-is-the-clients');
      const anchors = anchorsOf('# Title\n\n## Usage\n\n## Usage\n\n```\n# not a heading\n```\n| <a id="f15"></a>F15 |\n');
      expect([...anchors]).to.have.members(['title', 'usage', 'usage-1', 'f15']);
    });

    it('accepts references that lead somewhere', () => {
      const text = [
        '// see src/app.ts and docs/decisions.md#d2-native-requests-pass-through, or docs/ itself.',
        "import x from '../shared-state/redis'; // a relative import, not a path from the root",
        '// https://example.com/docs/partner-models/claude is a URL',
      ].join('\n');
      expect(reasons('src/x.ts', text)).to.deep.equal([]);
      expect(reasons('docs/x.md', 'Read [the decisions](decisions.md#f15) and [this](#) and [that](https://example.com).')).to.deep.equal([]);
    });

    it('fails on a missing file, a missing section and an anchor on code', () => {
      const text = 'see src/missing.ts\nsee docs/decisions.md#d99-nothing\nsee src/app.ts#top';
      expect(reasons('src/x.ts', text)).to.deep.equal([
        '1: src/missing.ts: no file src/missing.ts in the repository',
        '2: docs/decisions.md#d99-nothing: docs/decisions.md has no section #d99-nothing',
        '3: src/app.ts#top: an anchor on a file that is not Markdown',
      ]);
    });

    it('fails on Markdown links to missing files, missing sections, or outside the repository', () => {
      expect(reasons('docs/x.md', '[a](nothing.md) [b](decisions.md#nowhere) [c](../../elsewhere.md)')).to.deep.equal([
        '1: nothing.md: no file docs/nothing.md in the repository',
        '1: decisions.md#nowhere: docs/decisions.md has no section #nowhere',
        '1: ../../elsewhere.md: leads outside the repository',
      ]);
    });

    it('looks up no path in a file marked as naming made-up paths, but still refuses the outside documents', () => {
      const marked = `// ${SAMPLES_MARKER}\nsee src/missing.ts\n// ${'RELIA' + 'BILITY'} A4`;
      expect(reasons('test/x.test.ts', marked)).to.have.length(1);
    });

    it('fails on a file named bare in Markdown code that no longer exists anywhere', () => {
      expect(reasons('docs/x.md', 'the relay (`app.ts`, `translating-relay.ts`)')).to.deep.equal([
        '1: translating-relay.ts: no file named translating-relay.ts in the repository',
      ]);
      expect(reasons('src/x.ts', '// `translating-relay.ts` in code is not looked up')).to.deep.equal([]);
    });

    it('fails on any mention of the outside documents', () => {
      const outside = ['DECI' + 'SIONS.md 2', 'RELIA' + 'BILITY F12', 'PROTO' + 'COLS.md', 'gateway' + '-spec.md', '../sha' + 'red/vendor-specs', 'fact 4 (\u00a70)'];
      for (const mention of outside) {
        expect(reasons('src/x.ts', `// ${mention}`), mention).to.have.length(1);
      }
    });
  });

  it('finds no reference in the repository that leads nowhere', () => {
    const repo = repositoryAt(PACKAGE_ROOT);
    const files = textFiles(PACKAGE_ROOT, SCANNED);
    expect(files.length).to.be.greaterThan(300);
    expect(files).to.include.members(['README.md', 'docs/decisions.md', 'test/docs/references.test.ts']);
    const problems: string[] = [];
    for (const file of files) {
      const text = readFileSync(path.join(PACKAGE_ROOT, file), 'utf8');
      for (const problem of referenceProblems(file, text, repo)) problems.push(`${problem.file}:${problem.line}: ${problem.reference} (${problem.why})`);
    }
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });
});
