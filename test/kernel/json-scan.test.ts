import { expect } from 'chai';
import { GatewayError } from '../../src/kernel/errors';
import { replaceModel, scanJson } from '../../src/kernel/json-scan';

function scan(text: string, depth = 64) {
  return scanJson(Buffer.from(text), depth);
}

function codeOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    return err instanceof GatewayError ? err.code : 'not a GatewayError';
  }
}

describe('scanJson', () => {
  it('finds the byte span of the top-level model string, quotes included', () => {
    const text = '{ "messages": [{"model": "inner"}], "model" : "gpt-x", "n": 1 }';
    const { modelSpan } = scan(text);
    expect(modelSpan).to.not.equal(null);
    expect(text.slice(modelSpan![0], modelSpan![1])).to.equal('"gpt-x"');
  });

  it('ignores a model key nested below the top level', () => {
    expect(scan('{"metadata": {"model": "x"}}').modelSpan).to.equal(null);
  });

  it('takes the last of duplicate model keys, as JSON.parse does', () => {
    const text = '{"model":"a","model":"b"}';
    const { modelSpan } = scan(text);
    expect(text.slice(modelSpan![0], modelSpan![1])).to.equal('"b"');
    expect(JSON.parse(text).model).to.equal('b');
  });

  it('counts bytes, not characters, before the model when the body has multi-byte text', () => {
    const raw = Buffer.from('{"system":"héllo 😀","model":"m1"}');
    const { modelSpan } = scanJson(raw, 64);
    expect(raw.subarray(modelSpan![0], modelSpan![1]).toString()).to.equal('"m1"');
  });

  it('is not fooled by quotes and braces inside strings', () => {
    const text = '{"a":"x\\"}{\\\\","model":"m"}';
    const { modelSpan } = scan(text);
    expect(text.slice(modelSpan![0], modelSpan![1])).to.equal('"m"');
  });

  it('recognises a model key written with escapes', () => {
    const text = '{"\\u006dodel":"m"}';
    const { modelSpan } = scan(text);
    expect(text.slice(modelSpan![0], modelSpan![1])).to.equal('"m"');
  });

  it('rejects nesting deeper than the limit before parsing', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(codeOf(() => scan(`{"model":"m","messages":${deep}}`, 32))).to.equal('TOLLGATE_ERR_BODY_TOO_DEEP');
  });

  it('accepts nesting exactly at the limit', () => {
    expect(codeOf(() => scan('[[[1]]]', 3))).to.equal(null);
    expect(codeOf(() => scan('[[[[1]]]]', 3))).to.equal('TOLLGATE_ERR_BODY_TOO_DEEP');
  });

  it('rejects __proto__ keys at any depth, also when escaped', () => {
    expect(codeOf(() => scan('{"__proto__":{"isAdmin":true}}'))).to.equal('TOLLGATE_ERR_BODY_FORBIDDEN_KEY');
    expect(codeOf(() => scan('{"a":[{"__proto__":1}]}'))).to.equal('TOLLGATE_ERR_BODY_FORBIDDEN_KEY');
    expect(codeOf(() => scan('{"\\u005f_proto__":1}'))).to.equal('TOLLGATE_ERR_BODY_FORBIDDEN_KEY');
  });

  it('rejects constructor.prototype but allows either key alone', () => {
    expect(codeOf(() => scan('{"constructor":{"prototype":{"x":1}}}'))).to.equal('TOLLGATE_ERR_BODY_FORBIDDEN_KEY');
    expect(codeOf(() => scan('{"constructor":"c","prototype":"p"}'))).to.equal(null);
  });

  it('allows "__proto__" as a string value', () => {
    expect(codeOf(() => scan('{"text":"__proto__"}'))).to.equal(null);
  });

  it('stays safe on malformed input', () => {
    for (const text of ['{"model":', '{"model":"unterminated', '}}}]]', '"', '{"a":"\\']) {
      expect(() => scan(text)).to.not.throw();
    }
  });
});

describe('replaceModel', () => {
  it('changes only the model literal and keeps every other byte', () => {
    const raw = Buffer.from('{ "model":"public",\n  "x": "\\u00e9" }');
    const { modelSpan } = scanJson(raw, 64);
    const out = replaceModel(raw, modelSpan!, 'upstream-id');
    expect(out.toString()).to.equal('{ "model":"upstream-id",\n  "x": "\\u00e9" }');
  });
});
