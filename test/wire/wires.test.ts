/**
 * The descriptors as a set: gateway.yaml accepts exactly the protocols that have one (the compiler
 * checks the other direction: a protocol in the type without a complete descriptor does not build),
 * and the pieces a descriptor declares fit together.
 */
import { expect } from 'chai';
import { readSchema, GATEWAY_SCHEMA_FILE } from '../../src/config/schema';
import { ENDPOINTS } from '../../src/protocols/types';
import { WIRES } from '../../src/wire';

describe('wire descriptors', () => {
  it('gateway.yaml accepts exactly the protocols that have a descriptor', () => {
    const schema = readSchema(GATEWAY_SCHEMA_FILE) as { $defs: { provider: { properties: { protocol: { enum: string[] } } } } };
    expect([...schema.$defs.provider.properties.protocol.enum].sort()).to.deep.equal(Object.keys(WIRES).sort());
  });

  it('gives every protocol that needs translation a family, and native endpoints of that family', () => {
    for (const [protocol, wire] of Object.entries(WIRES)) {
      expect(wire.nativeEndpoints, protocol).to.not.be.empty;
      if (wire.family === null) continue;
      for (const endpoint of wire.nativeEndpoints) expect(ENDPOINTS[endpoint].family, `${protocol} ${endpoint}`).to.equal(wire.family);
    }
  });

  it('parses each protocol\'s stream framing with a fresh parser per stream', () => {
    for (const [protocol, wire] of Object.entries(WIRES)) expect(wire.framing.newParser(1024 * 1024), protocol).to.not.equal(wire.framing.newParser(1024 * 1024));
  });
});
