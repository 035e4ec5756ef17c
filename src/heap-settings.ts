/**
 * V8's heap settings from gateway.yaml, applied when `tollgate serve` starts (in the primary and in
 * each worker). V8 reads its heap growing factor at every full collection, so setting it at run time
 * takes effect from the next one; `node --heap-growing-percent` would need a wrapper around the CLI.
 * The default (50) keeps a gateway's memory near what it holds: V8's own growth, made for throughput,
 * let 128 open streams peak at 181-202 MiB where 50 keeps them at 145-147, for about 6% more CPU per
 * stream (docs/benchmarks.md).
 */
import { setFlagsFromString } from 'node:v8';
import type { GatewayConfig } from './config/types';

/** Applies `server.heap_growing_percent` unless it is 0 (V8 decides); returns the V8 flag it set, or null. */
export function applyHeapSettings(server: GatewayConfig['server'], setFlags: (flags: string) => void = setFlagsFromString): string | null {
  if (server.heap_growing_percent === 0) return null;
  const flag = `--heap-growing-percent=${server.heap_growing_percent}`;
  setFlags(flag);
  return flag;
}
