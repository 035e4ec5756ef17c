/**
 * The config types are generated from the schemas (`npm run schema:types`); a schema edited without
 * regenerating them fails here, so the two can never disagree.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { SCHEMA_TYPES_FILE, schemaTypes } from '../../src/config/generate-schema-types';

describe('config/schema-types', () => {
  const generated = schemaTypes();

  it('is exactly what the schemas generate (after a schema edit, run npm run schema:types)', () => {
    expect(readFileSync(SCHEMA_TYPES_FILE, 'utf8') === generated, 'src/config/schema-types.ts differs from what the schemas generate: run npm run schema:types').to.equal(true);
  });

  it('makes a field with a default always present and one without it optional', () => {
    expect(generated).to.include('  readonly api_key: string;\n');
    expect(generated).to.include('  readonly upstream_model?: string;\n');
    expect(generated).to.include('  readonly sample_ratio?: number;\n');
  });

  it('types each plugin section from its own schema file', () => {
    expect(generated).to.match(/readonly 'rate-limit': RateLimitPluginConfig;/);
    expect(generated).to.match(/export interface RateLimitPluginConfig \{/);
    expect(generated).to.match(/readonly overage: 'charge' \| 'cap';/);
  });

  it('writes a union without the literals a wider member covers', () => {
    // { const: 0 } or an integer of 5 to 400: `0 | number` would say no more than `number`.
    expect(generated).to.include('  readonly heap_growing_percent: number;\n');
    expect(generated).to.include("  readonly workers: number | 'auto';\n");
  });
});
