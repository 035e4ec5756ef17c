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

  it('refuses duplicate model keys, which JSON.parse reads last-wins and other parsers first-wins', () => {
    const text = '{"model":"a","model":"b"}';
    expect(codeOf(() => scan(text))).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
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

  describe('duplicate keys (docs/decisions.md#d18-a-body-is-read-one-way-or-refused)', () => {
    const refused = (text: string) => codeOf(() => scan(text));

    it('refuses a key twice at the top level, naming it', () => {
      expect(refused('{"model":"m","service_tier":"auto","service_tier":"priority"}')).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      let message = '';
      try {
        scan('{"service_tier":"auto","service_tier":"priority"}');
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).to.equal('The request body has the key "service_tier" twice in one object; send each key once.');
    });

    it('refuses a key twice at any depth: in a message, in a content block, in a tool schema', () => {
      expect(refused('{"messages":[{"role":"user","content":"a","content":"b"}]}')).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      expect(refused('{"messages":[{"role":"user","content":[{"type":"text","text":"a","type":"image"}]}]}')).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      expect(refused('{"tools":[{"input_schema":{"properties":{"x":{"type":"string","type":"number"}}}}]}')).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
    });

    it('sees a duplicate however the key is written: escapes and non-ASCII keys read as JSON.parse reads them', () => {
      expect(refused('{"speed":"x","\\u0073peed":"fast"}')).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      expect(refused('{"é":1,"\\u00e9":2}')).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      expect(refused('{"é":1,"è":2}')).to.equal(null);
    });

    it('lets the same key appear once in each of several objects, in sibling and nested objects alike', () => {
      expect(refused('{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"metadata":{"role":"x","metadata":{"role":"y"}}}')).to.equal(null);
      // A key closed with its object is forgotten: the outer object's later key is its own.
      expect(refused('{"a":{"b":1},"b":{"a":2}}')).to.equal(null);
      expect(refused('{"a":[{"a":1}],"c":[{"a":1,"b":2},{"a":3,"b":4}]}')).to.equal(null);
    });

    it('counts a key used as a value, or a string in an array, as no key', () => {
      expect(refused('{"a":"a","b":["b","b"],"c":"a"}')).to.equal(null);
    });

    it('finds a duplicate among many keys in one object, past the linear search, and in the next object too', () => {
      const keys = Array.from({ length: 1000 }, (_, i) => `"k${i}":${i}`);
      expect(refused(`{${keys.join(',')}}`)).to.equal(null);
      expect(refused(`{${keys.join(',')},"k500":0}`)).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      expect(refused(`{${keys.join(',')},"k3":0}`)).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
      expect(refused(`{"a":{${keys.join(',')}},"b":{${keys.join(',')}}}`)).to.equal(null);
      expect(refused(`{"a":{${keys.join(',')}},"b":{${keys.join(',')},"k999":1}}`)).to.equal('TOLLGATE_ERR_BODY_DUPLICATE_KEY');
    });

    it('stays linear in the number of keys: 200,000 keys in one object scan in well under a second', () => {
      const keys = Array.from({ length: 200_000 }, (_, i) => `"k${i}":0`);
      const started = performance.now();
      expect(refused(`{${keys.join(',')}}`)).to.equal(null);
      // A quadratic check would compare 2·10^10 pairs; linear takes milliseconds. Wide margin for a loaded machine.
      expect(performance.now() - started).to.be.below(5000);
    });
  });

  it('stays safe on malformed input', () => {
    for (const text of ['{"model":', '{"model":"unterminated', '}}}]]', '"', '{"a":"\\', ']]{"a":1}}}{"a":1}']) {
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
