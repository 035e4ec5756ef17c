/** `tollgate config check [file]`: validates gateway.yaml and reports every problem, never a stack trace. */
import { ConfigError } from '../config/config-error';
import { loadConfigFile } from '../config/load';
import type { GatewayConfig, PluginName } from '../config/types';

/** Checks `file`, writes the verdict through `out` one line at a time, and returns the exit code (0 valid, 1 not). */
export function runConfigCheck(file: string, out: (line: string) => void): number {
  try {
    out(`${file}: OK (${summary(loadConfigFile(file))})`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const line of err.message.split('\n')) out(line);
    } else {
      // A bug in the loader still gets one readable line: the operator ran a check, not a debugger.
      out(`${file}: check failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    return 1;
  }
}

/** `3 providers, 8 models, plugins: auth, upstream` (enabled plugins only). */
function summary(config: GatewayConfig): string {
  const providers = Object.keys(config.providers).length;
  const models = Object.keys(config.models).length;
  const enabled = (Object.keys(config.plugins) as PluginName[]).filter((name) => config.plugins[name].enabled);
  return `${plural(providers, 'provider')}, ${plural(models, 'model')}, plugins: ${enabled.join(', ') || 'none'}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
