/** What a charge keeps about its client: a bounded, printable session id, a truncated user agent, the playground mark. */
import { expect } from 'chai';
import { clientTrail } from '../../src/billing/client-trail';

const headers = (values: Record<string, string>) => (field: string) => values[field] ?? '';

describe('billing: client trail', () => {
  it("takes Tollgate's session header first, then Claude Code's, then Codex's", () => {
    expect(clientTrail(headers({ session_id: 'codex-1' }), 'm', 'm').sessionId).to.equal('codex-1');
    expect(clientTrail(headers({ session_id: 'codex-1', 'x-claude-code-session-id': 'cc-1' }), 'm', 'm').sessionId).to.equal('cc-1');
    expect(clientTrail(headers({ 'x-claude-code-session-id': 'cc-1', 'x-tollgate-session': 'mine' }), 'm', 'm').sessionId).to.equal('mine');
    expect(clientTrail(headers({}), 'm', 'm').sessionId).to.equal(null);
  });

  it('keeps no session id that is too long or not printable ASCII', () => {
    expect(clientTrail(headers({ 'x-tollgate-session': 'a'.repeat(128) }), 'm', 'm').sessionId).to.equal('a'.repeat(128));
    for (const bad of ['a'.repeat(129), 'has space', 'tab\there', 'é-accent', '\u001b[31m']) {
      expect(clientTrail(headers({ 'x-tollgate-session': bad }), 'm', 'm').sessionId, JSON.stringify(bad)).to.equal(null);
    }
  });

  it('truncates the user agent to 200 characters and masks control characters', () => {
    const trail = clientTrail(headers({ 'user-agent': `agent\u0007${'x'.repeat(300)}` }), 'm', 'm');
    expect(trail.userAgent).to.have.length(200);
    expect(trail.userAgent!.startsWith('agent?x')).to.equal(true);
    expect(clientTrail(headers({}), 'm', 'm').userAgent).to.equal(null);
  });

  it('marks the playground, and keeps the model name asked for only when it was resolved to another', () => {
    expect(clientTrail(headers({ 'x-tollgate-origin': 'playground' }), 'm', 'm').origin).to.equal('playground');
    expect(clientTrail(headers({ 'x-tollgate-origin': 'elsewhere' }), 'm', 'm').origin).to.equal(null);
    expect(clientTrail(headers({}), 'sonnet', 'claude-sonnet-5').requestedModel).to.equal('sonnet');
    expect(clientTrail(headers({}), 'claude-sonnet-5', 'claude-sonnet-5').requestedModel).to.equal(null);
  });
});
