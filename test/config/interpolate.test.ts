import { expect } from 'chai';
import { interpolateString, resolvePlainScalar } from '../../src/config/interpolate';

const ENV: NodeJS.ProcessEnv = { KEY: 'sk-1', EMPTY: '', PORT: '9000' };

describe('config/interpolate', () => {
  describe('interpolateString', () => {
    const cases: { input: string; text: string; problems?: string[]; whole?: boolean }[] = [
      { input: 'no variables', text: 'no variables' },
      { input: '${KEY}', text: 'sk-1', whole: true },
      { input: 'Bearer ${KEY}!', text: 'Bearer sk-1!' },
      { input: '${EMPTY}', text: '', whole: true },
      { input: '${EMPTY:-fallback}', text: 'fallback', whole: true },
      { input: '${MISSING:-}', text: '', whole: true },
      { input: '${MISSING:-a:b c}', text: 'a:b c', whole: true },
      { input: '${KEY:-unused}', text: 'sk-1', whole: true },
      { input: '$${KEY}', text: '${KEY}' },
      { input: 'cost $5 and $$ stay', text: 'cost $5 and $$ stay' },
      { input: '${PORT}${PORT}', text: '90009000' },
      {
        input: 'x${MISSING}y',
        text: 'xy',
        problems: ['environment variable "MISSING" is not set (write ${MISSING:-} to allow it empty)'],
      },
      { input: '${1BAD}', text: '${1BAD}', problems: ['invalid substitution "${1BAD}": write ${NAME} or ${NAME:-default}, or $${ for a literal ${'], whole: true },
      { input: 'a ${KEY', text: 'a ${KEY', problems: ['unterminated "${": close it with "}", or write $${ for a literal ${'] },
    ];
    for (const { input, text, problems = [], whole = false } of cases) {
      it(`turns ${JSON.stringify(input)} into ${JSON.stringify(text)}`, () => {
        expect(interpolateString(input, ENV)).to.deep.equal({ text, problems, wholeExpression: whole });
      });
    }
  });

  describe('resolvePlainScalar', () => {
    const cases: { text: string; value: string | number | boolean | null }[] = [
      { text: '8080', value: 8080 },
      { text: '0.25', value: 0.25 },
      { text: 'true', value: true },
      { text: 'null', value: null },
      { text: '', value: '' },
      { text: 'sk-1', value: 'sk-1' },
      { text: 'a: b', value: 'a: b' },
      { text: '80 # port', value: '80 # port' },
      { text: '[1, 2]', value: '[1, 2]' },
    ];
    for (const { text, value } of cases) {
      it(`reads ${JSON.stringify(text)} as ${JSON.stringify(value)}`, () => {
        expect(resolvePlainScalar(text)).to.equal(value);
      });
    }
  });
});
