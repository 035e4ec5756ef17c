/**
 * The secret key's forms (64 hex digits or base64, as `openssl rand` prints them) and what a sealed
 * value guarantees: it opens with its key for its account only, and a changed byte does not open.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { isSealed, seal, unseal } from '../../src/auth/sealed-secret';
import { parseSecretKey, SecretKeyError } from '../../src/auth/secret-key';

describe('auth: the secret key and sealed secrets', () => {
  it('reads 32 bytes written as hex, base64 or base64url, blanks around ignored', () => {
    const key = randomBytes(32);
    for (const text of [key.toString('hex'), key.toString('hex').toUpperCase(), key.toString('base64'), key.toString('base64url'), ` ${key.toString('base64')}\n`]) {
      expect(parseSecretKey(text, 'TOLLGATE_SECRET_KEY').equals(key), text).to.equal(true);
    }
  });

  it('refuses anything else with an error that names the source and never the value', () => {
    for (const text of [randomBytes(31).toString('base64'), randomBytes(33).toString('hex'), 'x'.repeat(64), 'correct horse battery staple', '']) {
      let caught: unknown;
      try {
        parseSecretKey(text, 'TOLLGATE_SECRET_KEY');
      } catch (error) {
        caught = error;
      }
      expect(caught, text).to.be.instanceOf(SecretKeyError);
      expect((caught as Error).message).to.include('TOLLGATE_SECRET_KEY must be 32 bytes');
      if (text !== '') expect((caught as Error).message).not.to.include(text);
    }
  });

  it('opens a sealed value with its key and its context only; a changed byte opens nothing', () => {
    const key = randomBytes(32);
    const sealed = seal(key, 'JBSWY3DPEHPK3PXP', 'totp:acc_1');
    expect(isSealed(sealed)).to.equal(true);
    expect(seal(key, 'JBSWY3DPEHPK3PXP', 'totp:acc_1')).not.to.equal(sealed);
    expect(unseal(key, sealed, 'totp:acc_1')).to.equal('JBSWY3DPEHPK3PXP');
    expect(unseal(randomBytes(32), sealed, 'totp:acc_1')).to.equal(null);
    expect(unseal(key, sealed, 'totp:acc_2')).to.equal(null);
    // The ciphertext's first character (a final one may carry padding bits only).
    const at = sealed.lastIndexOf(':') + 1;
    const changed = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    expect(unseal(key, changed, 'totp:acc_1')).to.equal(null);
    expect(isSealed('JBSWY3DPEHPK3PXP')).to.equal(false);
    expect(unseal(key, 'JBSWY3DPEHPK3PXP', 'totp:acc_1')).to.equal(null);
  });
});
