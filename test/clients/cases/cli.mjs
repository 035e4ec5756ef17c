/** Running a CLI client: a throwaway HOME, telemetry and updates off, only 127.0.0.1 reachable by config. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../node_modules/.bin/', import.meta.url));

/** Runs `command` with `args` (or `args(home)`) in a fresh HOME; resolves with its exit code, output and wall time (`ms`). */
export async function runCli(command, args, options = {}) {
  const [run] = await runCliSession(command, [args], options);
  return run;
}

/**
 * Runs `command` once per entry of `argsList`, one after the other in the same fresh HOME (a session
 * the next run resumes); resolves with each run's exit code and output. `afterRun(run, index)` is
 * awaited after each run, before the next starts (to read what that run alone did).
 */
export async function runCliSession(command, argsList, { env = {}, setup, afterRun, timeoutMs = 90_000 } = {}) {
  const home = mkdtempSync(join(tmpdir(), 'tollgate-client-'));
  try {
    if (setup !== undefined) await setup(home);
    const runs = [];
    for (const args of argsList) {
      runs.push(await runIn(home, command, typeof args === 'function' ? args(home) : args, env, timeoutMs));
      if (afterRun !== undefined) await afterRun(runs.at(-1), runs.length - 1);
    }
    return runs;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function runIn(home, command, args, env, timeoutMs) {
  const started = performance.now();
  const child = spawn(join(BIN, command), args, {
    cwd: home,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      TMPDIR: home,
      NO_PROXY: '127.0.0.1,localhost',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr, home, ms: performance.now() - started };
}
