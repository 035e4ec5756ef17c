/**
 * Every provider protocol's descriptor, by protocol. The mapped type is the point: a protocol added to
 * `ProviderProtocol` fails to compile here until it has a complete `WireProtocol`, instead of failing
 * at run time in whichever switch forgot it.
 */
import type { ProviderConfig, ProviderProtocol } from '../config/types';
import type { Endpoint } from '../protocols/types';
import { ANTHROPIC_WIRE } from './anthropic';
import { BEDROCK_WIRE } from './bedrock';
import { ECHO_WIRE } from './echo';
import { OPENAI_WIRE } from './openai';
import { VERTEX_WIRE } from './vertex';
import type { WireProtocol } from './types';

export const WIRES: { readonly [P in ProviderProtocol]: WireProtocol } = {
  anthropic: ANTHROPIC_WIRE,
  openai: OPENAI_WIRE,
  bedrock: BEDROCK_WIRE,
  vertex: VERTEX_WIRE,
  echo: ECHO_WIRE,
};

/** The descriptor of the protocol `provider` speaks. */
export function wireOf(provider: Pick<ProviderConfig, 'protocol'>): WireProtocol {
  return WIRES[provider.protocol];
}

/** Whether `provider` answers `endpoint` without translation. */
export function speaksNatively(provider: ProviderConfig, endpoint: Endpoint): boolean {
  return wireOf(provider).nativeEndpoints.includes(endpoint.id);
}

export type { WireFamily, WireProtocol } from './types';
