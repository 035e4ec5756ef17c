/**
 * The Vertex token cache against the fake token endpoint, on a clock the test moves: one token serves
 * until five minutes before its end, concurrent callers share one refresh, and a failed refresh is not
 * remembered.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { credentialSource } from '../../src/providers/vertex/credentials';
import { GoogleTokenSource } from '../../src/providers/vertex/token-source';
import { startFakeVertex, type FakeVertex } from '../helpers/fake-vertex';

describe('providers/vertex GoogleTokenSource', () => {
  let vertex: FakeVertex;
  let dir: string;
  let keyFile: string;

  before(async () => {
    vertex = await startFakeVertex();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-token-'));
    keyFile = path.join(dir, 'sa.json');
    writeFileSync(keyFile, vertex.serviceAccountKey);
  });

  after(async () => {
    await vertex.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reuses a token until five minutes before it expires, then fetches a new one', async () => {
    // Tokens of ten minutes; the clock starts six minutes back so that every assertion it signs is
    // still one the endpoint accepts (issued in the past, not yet expired).
    vertex.tokenLifetimeSeconds = 600;
    let now = Date.now() - 6 * 60 * 1000;
    const tokens = new GoogleTokenSource(credentialSource(keyFile), () => now);
    try {
      const first = await tokens.token();
      now += 4 * 60 * 1000 + 59 * 1000;
      expect(await tokens.token()).to.equal(first);
      now += 2 * 1000;
      const second = await tokens.token();
      expect(second).to.not.equal(first);
      expect(vertex.tokensIssued).to.include.members([first, second]);
    } finally {
      vertex.tokenLifetimeSeconds = 3600;
    }
  });

  it('shares one refresh between concurrent callers', async () => {
    const before = vertex.tokensIssued.length;
    const tokens = new GoogleTokenSource(credentialSource(keyFile));
    const all = await Promise.all(Array.from({ length: 20 }, () => tokens.token()));
    expect(new Set(all).size).to.equal(1);
    expect(vertex.tokensIssued.length).to.equal(before + 1);
  });

  it('does not remember a failed refresh: an assertion the endpoint refuses fails, and the next call asks again', async () => {
    const source = credentialSource(keyFile);
    let now = Date.now() - 2 * 3600 * 1000; // an assertion that expired an hour ago
    const tokens = new GoogleTokenSource(source, () => now);
    const refused = await tokens.token().catch((error: Error) => error);
    expect(refused).to.be.instanceOf(Error);
    expect((refused as Error).message).to.match(/answered 400/);
    expect((refused as Error).message).to.not.include('BEGIN PRIVATE KEY');
    now = Date.now();
    expect(await tokens.token()).to.match(/^ya29\.test-/);
  });

  it('names the key file, never its content, when it is unusable', () => {
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ type: 'external_account', secret: 'S3CR3T' }));
    expect(() => credentialSource(bad)).to.throw(/bad\.json: credentials of type "external_account" are not supported/);
    expect(() => credentialSource(path.join(dir, 'missing.json'))).to.throw(/missing\.json: not a readable JSON credentials file \(ENOENT\)/);
  });
});
