/**
 * Argument helpers shared by the `tollgate` commands: node's parseArgs with short errors, positional
 * counts, and `UsageError`, the mistake-in-how-it-was-typed error that `runCli` turns into exit code 2.
 */

/** A mistake in how the command was typed; exits 2. */
export class UsageError extends Error {}

/** Runs node's parseArgs, turning its errors into a short UsageError. */
export function parse<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Node's unknown-option message goes on about `--`; its first sentence is the useful part.
    throw new UsageError(message.split('. To specify')[0]);
  }
}

/** Checks the number of positional arguments; `usage` goes into the message. */
export function expectPositionals(positionals: string[], required: number, usage: string): void {
  if (positionals.length < required) throw new UsageError(`missing argument; usage: tollgate ${usage}`);
  if (positionals.length > required) {
    throw new UsageError(`unexpected argument "${positionals[required]}"; usage: tollgate ${usage}`);
  }
}
