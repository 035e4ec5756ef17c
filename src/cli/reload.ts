/**
 * `tollgate reload` and the pid file it relies on. `serve` writes the file once it listens (and
 * handles SIGHUP); `reload` reads it, checks the server's gateway.yaml, then sends the server SIGHUP.
 * The file holds the pid on its first line and the server's config file on its second, so the
 * check reads exactly the file the server is about to read.
 */
import { readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../private-files';
import path from 'node:path';
import { ConfigError } from '../config/config-error';
import { loadConfigFile } from '../config/load';

/** The folder of the pid files, unless --pid-file or $TOLLGATE_PID_FILE name one: beside the default SQLite file. */
const PID_FOLDER = 'data';
const PID_FILE_NAME = /^tollgate-(\d{1,5})\.pid$/;

/**
 * The pid file of the instance listening on `port`, under `cwd`: one per instance, so a second server
 * started from the same folder (on another port) never overwrites the first one's file.
 */
export function pidFileFor(cwd: string, port: number): string {
  return path.resolve(cwd, PID_FOLDER, `tollgate-${port}.pid`);
}

/**
 * The pid file `reload` should read when none was named: the one for `port` when given, else the only
 * one under `cwd`. Throws a one-line Error when there is none, or several and no port to choose.
 */
export function findPidFile(cwd: string, port: number | undefined): string {
  if (port !== undefined) return pidFileFor(cwd, port);
  let names: string[];
  try {
    names = readdirSync(path.resolve(cwd, PID_FOLDER)).filter((name) => PID_FILE_NAME.test(name));
  } catch {
    names = [];
  }
  if (names.length === 1) return path.resolve(cwd, PID_FOLDER, names[0]);
  if (names.length === 0) {
    throw new Error(
      `no pid file in ${path.resolve(cwd, PID_FOLDER)}: is \`tollgate serve\` running from this directory? Pass --pid-file or set TOLLGATE_PID_FILE to the one it wrote`,
    );
  }
  const ports = names.map((name) => PID_FILE_NAME.exec(name)![1]).sort((a, b) => Number(a) - Number(b));
  throw new Error(`several servers run from this directory (ports ${ports.join(', ')}): say which with --port N`);
}

/** What a pid file says about the server that wrote it. */
interface PidFileContent {
  readonly pid: number;
  /** Absent in a file written by something other than `tollgate serve`. */
  readonly configFile?: string;
}

/** Writes `file` for this process (creating its folder), naming the config file it serves. */
export function writePidFile(file: string, configFile: string): void {
  makePrivateDir(path.dirname(file));
  writeFileSync(file, `${process.pid}\n${configFile}\n`, { mode: PRIVATE_FILE_MODE });
}

/** Removes `file` if it still names this process: a newer server may have taken it over. Never throws. */
export function removePidFile(file: string): void {
  try {
    if (readPidFile(file).pid === process.pid) unlinkSync(file);
  } catch {
    // Already gone or unreadable: nothing of ours to remove.
  }
}

/** Reads a pid file; throws a one-line Error saying what is wrong with it. */
function readPidFile(file: string): PidFileContent {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(
        `no pid file at ${file}: is \`tollgate serve\` running from this directory? Pass --pid-file or set TOLLGATE_PID_FILE to the one it wrote`,
        { cause: err },
      );
    }
    throw new Error(`cannot read the pid file ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const [first = '', second = ''] = text.split('\n').map((line) => line.trim());
  const pid = /^[1-9]\d{0,9}$/.test(first) ? Number(first) : NaN;
  if (!Number.isSafeInteger(pid)) throw new Error(`the pid file ${file} holds no process id (its first line is "${first.slice(0, 40)}")`);
  return second === '' ? { pid } : { pid, configFile: second };
}

/** Throws unless `pid` is a live process that looks like tollgate: SIGHUP kills a process that does not handle it. */
function assertTollgateRunning(pid: number, pidFile: string): void {
  try {
    process.kill(pid, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') {
      throw new Error(`stale pid file ${pidFile}: no process ${pid} is running (the server is not running, or exited without removing it); start the server, or delete the file`, { cause: err });
    }
    if (code === 'EPERM') throw new Error(`process ${pid} (from ${pidFile}) belongs to another user; run tollgate reload as that user`, { cause: err });
    throw err;
  }
  let commandLine: string;
  try {
    commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return; // No /proc (not Linux): the liveness check above is all we can do.
  }
  if (!commandLine.includes('tollgate')) {
    throw new Error(`stale pid file ${pidFile}: process ${pid} is not tollgate (it runs "${commandLine.slice(0, 80)}"); delete the file`);
  }
}

export interface ReloadCommandInput {
  readonly pidFile: string;
  /** The config to check when the pid file does not name one. */
  readonly defaultConfigFile: string;
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Checks the running server's gateway.yaml and sends the server SIGHUP; returns the exit code.
 * An invalid file is reported line by line and nothing is signalled. Other failures throw.
 */
export function reloadCommand(input: ReloadCommandInput, out: (line: string) => void, err: (line: string) => void): number {
  const server = readPidFile(input.pidFile);
  assertTollgateRunning(server.pid, input.pidFile);
  const configFile = server.configFile ?? input.defaultConfigFile;
  try {
    loadConfigFile(configFile, input.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const line of error.message.split('\n')) err(line);
    err(`tollgate: not reloaded; the server (pid ${server.pid}) keeps its current config until ${configFile} is fixed`);
    return 1;
  }
  process.kill(server.pid, 'SIGHUP');
  out(`${configFile}: OK; sent SIGHUP to tollgate (pid ${server.pid}), which reloads it now. Its log says what changed and what needs a restart.`);
  return 0;
}
