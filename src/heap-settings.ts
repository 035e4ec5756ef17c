/**
 * V8's heap settings from gateway.yaml, applied when `tollgate serve` starts (in the primary and in
 * each worker). V8 reads its heap growing factor at every full collection, so setting it at run time
 * takes effect from the next one; `node --heap-growing-percent` would need a wrapper around the CLI.
 */
import { setFlagsFromString } from 'node:v8';
import type { GatewayConfig } from './config/types';

/** Applies `server.heap_growing_percent` when set; returns the V8 flag it set, or null. */
export function applyHeapSettings(server: GatewayConfig['server'], setFlags: (flags: string) => void = setFlagsFromString): string | null {
  if (server.heap_growing_percent === undefined) return null;
  const flag = `--heap-growing-percent=${server.heap_growing_percent}`;
  setFlags(flag);
  return flag;
}
