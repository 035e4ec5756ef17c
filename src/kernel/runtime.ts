/** What requests run under, and the one reference the gateway swaps on reload. */
import type { GatewayConfig } from '../config/types';
import type { Chain } from './chain';

/** What requests run under; swapped whole on reload, so a request keeps the one it started with. */
export interface Runtime {
  readonly config: GatewayConfig;
  readonly chain: Chain;
}

export interface RuntimeRef {
  current: Runtime;
}
