import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { generateApiKey, hashApiKey, keysEqual, parsePresentedKey } from '../../src/auth/keys';

describe('auth/keys', () => {
  describe('generateApiKey', () => {
    it('returns sk- followed by 48 base62 characters', () => {
      const { key } = generateApiKey();
      expect(key).to.have.length(51);
      expect(key).to.match(/^sk-[A-Za-z0-9]{48}$/);
    });

    it('returns the SHA-256 of the key as a 32-byte hash', () => {
      const generated = generateApiKey();
      expect(generated.hash).to.have.length(32);
      expect(generated.hash.equals(createHash('sha256').update(generated.key).digest())).to.equal(true);
      expect(generated.hash.equals(hashApiKey(generated.key))).to.equal(true);
    });

    it('returns the first 7 and the last 4 characters as display parts', () => {
      const generated = generateApiKey();
      expect(generated.prefix).to.equal(generated.key.slice(0, 7));
      expect(generated.prefix.startsWith('sk-')).to.equal(true);
      expect(generated.last4).to.equal(generated.key.slice(-4));
    });

    it('never repeats a key over 1000 generations and uses the whole alphabet', () => {
      const keys = new Set<string>();
      const seen = new Set<string>();
      for (let i = 0; i < 1000; i += 1) {
        const { key } = generateApiKey();
        keys.add(key);
        for (const char of key.slice(3)) seen.add(char);
      }
      expect(keys.size).to.equal(1000);
      // 48 000 draws over 62 characters: each one appears about 774 times, so all must show up.
      expect(seen.size).to.equal(62);
    });

    it('is accepted by parsePresentedKey', () => {
      const { key } = generateApiKey();
      expect(parsePresentedKey(key)).to.equal(key);
    });
  });

  describe('parsePresentedKey', () => {
    const body32 = 'A'.repeat(32);

    it('accepts sk- with 32 characters of [A-Za-z0-9_-]', () => {
      expect(parsePresentedKey(`sk-${body32}`)).to.equal(`sk-${body32}`);
      expect(parsePresentedKey('sk-ab_cd-EF0123456789abcdefghijklmnop')).to.equal('sk-ab_cd-EF0123456789abcdefghijklmnop');
    });

    it('accepts exactly 200 characters', () => {
      const key = `sk-${'x'.repeat(197)}`;
      expect(parsePresentedKey(key)).to.equal(key);
    });

    it('rejects a truncated key', () => {
      const { key } = generateApiKey();
      expect(parsePresentedKey(key.slice(0, 34))).to.equal(null);
      expect(parsePresentedKey('sk-')).to.equal(null);
      expect(parsePresentedKey('')).to.equal(null);
    });

    it('rejects a wrong prefix', () => {
      expect(parsePresentedKey(`pk-${body32}`)).to.equal(null);
      expect(parsePresentedKey(`SK-${body32}`)).to.equal(null);
      expect(parsePresentedKey(`sk_${body32}`)).to.equal(null);
      expect(parsePresentedKey(`Bearer sk-${body32}`)).to.equal(null);
    });

    it('rejects a key longer than 200 characters', () => {
      expect(parsePresentedKey(`sk-${'x'.repeat(198)}`)).to.equal(null);
      expect(parsePresentedKey(`sk-${'x'.repeat(100_000)}`)).to.equal(null);
    });

    it('rejects characters outside [A-Za-z0-9_-]', () => {
      for (const bad of [' ', '.', '+', '/', '=', '\n', 'é', '\u0000']) {
        expect(parsePresentedKey(`sk-${body32}${bad}`), JSON.stringify(bad)).to.equal(null);
      }
      expect(parsePresentedKey(` sk-${body32}`)).to.equal(null);
    });
  });

  describe('keysEqual', () => {
    it('returns true for equal digests and false for different ones', () => {
      const a = hashApiKey('sk-a');
      expect(keysEqual(a, hashApiKey('sk-a'))).to.equal(true);
      expect(keysEqual(a, hashApiKey('sk-b'))).to.equal(false);
    });

    it('returns false without throwing when the lengths differ', () => {
      const a = hashApiKey('sk-a');
      expect(() => keysEqual(a, Buffer.alloc(3))).not.to.throw();
      expect(keysEqual(a, Buffer.alloc(3))).to.equal(false);
      expect(keysEqual(Buffer.alloc(0), a)).to.equal(false);
      expect(keysEqual(a, Buffer.concat([a, a, a]))).to.equal(false);
    });
  });
});
