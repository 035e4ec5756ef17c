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

  it('holds the heap to 50% growth when gateway.yaml says nothing', () => {
    const config = parseConfig(MINIMAL, 'gateway.yaml', {});
    const set: string[] = [];
    expect(applyHeapSettings(config.server, (flags) => set.push(flags))).to.equal('--heap-growing-percent=50');
    expect(set).to.deep.equal(['--heap-growing-percent=50']);
  });

  it('leaves V8 its own growth with 0', () => {
    const config = parseConfig(`server: { heap_growing_percent: 0 }\n${MINIMAL}`, 'gateway.yaml', {});
    const set: string[] = [];
    expect(applyHeapSettings(config.server, (flags) => set.push(flags))).to.equal(null);
    expect(set).to.deep.equal([]);
  });

  it('refuses a value out of range, naming the file, line and field', () => {
    for (const value of [1, 401, -5]) {
      expect(() => parseConfig(`server:\n  heap_growing_percent: ${value}\n${MINIMAL}`, 'gateway.yaml', {}), String(value))
        .to.throw(/gateway\.yaml.*2.*heap_growing_percent/s);
    }
  });
});
