import { expect } from 'chai';
import { parseConfig } from '../src/config/load';
import { applyHeapSettings } from '../src/heap-settings';

const MINIMAL = `
providers:
  openai: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true }
`;

describe('server.heap_growing_percent', () => {
  it("sets V8's heap growing factor when gateway.yaml names one", () => {
    const config = parseConfig(`server: { heap_growing_percent: 25 }\n${MINIMAL}`, 'gateway.yaml', {});
    const set: string[] = [];
    expect(applyHeapSettings(config.server, (flags) => set.push(flags))).to.equal('--heap-growing-percent=25');
    expect(set).to.deep.equal(['--heap-growing-percent=25']);
  });

  it('leaves V8 alone when it is not set', () => {
    const config = parseConfig(MINIMAL, 'gateway.yaml', {});
    const set: string[] = [];
    expect(applyHeapSettings(config.server, (flags) => set.push(flags))).to.equal(null);
    expect(set).to.deep.equal([]);
  });

  it('refuses a value out of range, naming the file, line and field', () => {
    expect(() => parseConfig(`server:\n  heap_growing_percent: 1\n${MINIMAL}`, 'gateway.yaml', {}))
      .to.throw(/gateway\.yaml.*2.*heap_growing_percent/s);
  });
});
