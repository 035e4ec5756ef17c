/**
 * Reading a V8 .cpuprofile (what `node --cpu-prof` writes): self time per function and per part of
 * the code base (a package under node_modules, a folder of src/, a plugin, node's own code, GC),
 * counted over the samples taken inside a time window.
 */

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}

/** The fields of the .cpuprofile format used here; times in µs of the monotonic clock. */
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time of one entry, in µs. */
export interface SelfTime {
  readonly name: string;
  readonly micros: number;
}

export interface Breakdown {
  /** Sampled time in the window that was not idle, in µs. */
  readonly busyMicros: number;
  /** Idle time in the window, in µs (excluded from busy). */
  readonly idleMicros: number;
  /** Largest first. */
  readonly byFunction: readonly SelfTime[];
  readonly byPart: readonly SelfTime[];
  /** Whether the window lay inside the profile; when not, every sample was counted. */
  readonly windowed: boolean;
}

const IDLE = '(idle)';

/** Which part of the code base a frame belongs to. */
function partOf(frame: CallFrame): string {
  const { functionName, url } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)') return '(program): V8 and native code outside JS';
  if (url === '') return 'native functions and V8 builtins (no script)';
  // The only WebAssembly a Node gateway runs: the HTTP parser of undici (llhttp).
  if (url.startsWith('wasm://')) return 'WebAssembly (llhttp, undici)';
  if (url.startsWith('node:')) return 'node internals';
  const file = url.replace(/^file:\/\//, '');
  const modules = file.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [first, second] = file.slice(modules + '/node_modules/'.length).split('/');
    return `node_modules/${first.startsWith('@') ? `${first}/${second}` : first}`;
  }
  const own = /\/(?:dist\/)?(src|plugins|bench)\/(.+)$/.exec(file);
  if (own !== null) {
    const [folder, rest] = [own[1], own[2].split('/')];
    // A file directly in the folder (gateway.js in src) is its own part.
    return `${folder}/${rest.length > 1 ? rest[0] : rest[0].replace(/\.js$/, '')}`;
  }
  return file;
}

/** A function's name with a short location: the file below dist/ or node_modules/, and its line. */
function functionLabel(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (frame.url === '') return name;
  const file = frame.url.replace(/^file:\/\//, '');
  const modules = file.lastIndexOf('/node_modules/');
  const own = /\/dist\/(.+)$/.exec(file);
  const short = modules >= 0 ? file.slice(modules + 1) : own !== null ? own[1] : file;
  return `${name}  ${short}:${frame.lineNumber + 1}`;
}

function sorted(totals: Map<string, number>): SelfTime[] {
  return [...totals].map(([name, micros]) => ({ name, micros })).sort((a, b) => b.micros - a.micros);
}

/**
 * Self time over the samples taken between `fromMicros` and `toMicros` (the profile's clock, which is
 * CLOCK_MONOTONIC on Linux, as process.hrtime in any process). A sample stands for the time until the
 * next one.
 */
export function breakdown(profile: CpuProfile, fromMicros: number, toMicros: number): Breakdown {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const windowed = fromMicros >= profile.startTime && toMicros <= profile.endTime && fromMicros < toMicros;
  const byFunction = new Map<string, number>();
  const byPart = new Map<string, number>();
  let busyMicros = 0;
  let idleMicros = 0;
  let at = profile.startTime;
  const stamps = profile.timeDeltas.map((delta) => (at += delta));
  for (let i = 0; i < profile.samples.length; i++) {
    const stamp = stamps[i];
    if (windowed && (stamp < fromMicros || stamp >= toMicros)) continue;
    const micros = (i + 1 < stamps.length ? stamps[i + 1] : profile.endTime) - stamp;
    const frame = nodes.get(profile.samples[i])?.callFrame;
    if (frame === undefined || micros <= 0) continue;
    if (frame.functionName === IDLE) {
      idleMicros += micros;
      continue;
    }
    busyMicros += micros;
    const label = functionLabel(frame);
    byFunction.set(label, (byFunction.get(label) ?? 0) + micros);
    const part = partOf(frame);
    byPart.set(part, (byPart.get(part) ?? 0) + micros);
  }
  return { busyMicros, idleMicros, byFunction: sorted(byFunction), byPart: sorted(byPart), windowed };
}
