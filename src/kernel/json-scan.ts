/**
 * One pass over the raw JSON bytes, before `JSON.parse`, that finds what parsing alone cannot tell: nesting
 * deeper than the limit, prototype-poisoning keys (docs/faults.md#b3, docs/faults.md#b4), a key repeated in
 * one object (docs/faults.md#b8: parsers disagree on which copy wins, so the provider could read the body
 * otherwise than Tollgate billed it), and the byte span of the top-level `"model"` value so a native route
 * can rename the model without re-serialising. It is not a validator: malformed JSON is left to
 * `JSON.parse`, and the scan only has to stay safe on it.
 */
import { GatewayError } from './errors';

export interface JsonScan {
  /** Byte span of the top-level `model` string literal, quotes included; null when absent or not a string. */
  readonly modelSpan: readonly [number, number] | null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Frame flags, one per open container. */
const IS_OBJECT = 1;
const IS_CONSTRUCTOR_VALUE = 2;

/**
 * An object's keys are compared one by one up to this many (nearly every object of a request has a
 * handful, and a short array beats hashing them); past it the object's keys move to a Set, so an object
 * of 100,000 keys costs no more per key than one of ten.
 */
const LINEAR_KEYS = 16;

/** Index of the quote closing the string whose opening quote is at `open`, or -1. */
function closingQuote(buf: Buffer, open: number): number {
  let at = open;
  for (;;) {
    at = buf.indexOf(QUOTE, at + 1);
    if (at === -1) return -1;
    let backslashes = 0;
    while (buf[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * Whether a backslash lies in `buf[from, to)`: searched only inside the key (a search to the end of the
 * body would make many keys quadratic), byte by byte, since keys are short and a view per key costs more.
 */
function hasBackslash(buf: Buffer, from: number, to: number): boolean {
  for (let at = from; at < to; at++) if (buf[at] === BACKSLASH) return true;
  return false;
}

/**
 * The decoded text of a key, as `JSON.parse` reads it: escapes (`"\u005f_proto__"`) must not smuggle a
 * forbidden name past us, nor `"\u0061"` pass as another key than `"a"`. UTF-8 is decoded as the parse
 * decodes the whole body (a key lies between ASCII quotes, so its bytes decode alike either way).
 */
function keyText(buf: Buffer, open: number, close: number): string {
  if (!hasBackslash(buf, open + 1, close)) return buf.toString('utf8', open + 1, close);
  try {
    return JSON.parse(buf.toString('utf8', open, close + 1)) as string;
  } catch {
    // Not a string JSON.parse reads: the parse refuses the body, and no key may match this one.
    return buf.toString('latin1', open, close + 1);
  }
}

/**
 * The keys of every open object, for the duplicate check: one flat list, each object's keys from its
 * start (`starts`, one per open container) to the end, the object past `LINEAR_KEYS` keys in a Set of
 * its own instead. No allocation per object beyond the list's growth.
 */
class OpenKeys {
  private readonly keys: string[] = [];
  private readonly starts: number[] = [];
  /** The Set of each open object past `LINEAR_KEYS`, by depth (1 = the top level); absent for the rest. */
  private readonly sets: (Set<string> | undefined)[] = [];

  open(): void {
    this.starts.push(this.keys.length);
  }

  close(): void {
    const depth = this.starts.length;
    const start = this.starts.pop();
    // A stray closing bracket in malformed input closes nothing.
    if (start === undefined) return;
    this.keys.length = start;
    if (this.sets.length >= depth) this.sets[depth] = undefined;
  }

  /** Adds `key` to the innermost object; false when it has it already. */
  add(key: string): boolean {
    const depth = this.starts.length;
    const set = this.sets[depth];
    if (set !== undefined) {
      if (set.has(key)) return false;
      set.add(key);
      return true;
    }
    const start = this.starts[depth - 1];
    const { keys } = this;
    for (let i = start; i < keys.length; i++) if (keys[i] === key) return false;
    if (keys.length - start < LINEAR_KEYS) {
      keys.push(key);
      return true;
    }
    const grown = new Set(keys.slice(start));
    grown.add(key);
    keys.length = start;
    this.sets[depth] = grown;
    return true;
  }
}

function forbidden(name: string): GatewayError {
  return new GatewayError(
    'TOLLGATE_ERR_BODY_FORBIDDEN_KEY',
    `The request body contains the key "${name}", which is not allowed.`,
  );
}

function duplicate(name: string): GatewayError {
  const shown = name.length > 80 ? `${name.slice(0, 80)}…` : name;
  return new GatewayError(
    'TOLLGATE_ERR_BODY_DUPLICATE_KEY',
    `The request body has the key ${JSON.stringify(shown)} twice in one object; send each key once.`,
  );
}

/** Scans `buf`; throws a GatewayError (400) for excessive depth, a forbidden key or a repeated key. */
export function scanJson(buf: Buffer, maxDepth: number): JsonScan {
  const frames: number[] = [];
  const openKeys = new OpenKeys();
  let expectKey = false;
  let lastKey: string | null = null;
  let topLevelKey: string | null = null;
  let modelSpan: [number, number] | null = null;

  for (let i = 0; i < buf.length; i++) {
    const byte = buf[i];
    switch (byte) {
      case QUOTE: {
        const close = closingQuote(buf, i);
        if (close === -1) return { modelSpan };
        const frame = frames.length > 0 ? frames[frames.length - 1] : 0;
        if (expectKey && frame & IS_OBJECT) {
          lastKey = keyText(buf, i, close);
          if (lastKey === '__proto__') throw forbidden('__proto__');
          if (lastKey === 'prototype' && frame & IS_CONSTRUCTOR_VALUE) throw forbidden('constructor.prototype');
          if (!openKeys.add(lastKey)) throw duplicate(lastKey);
          if (frames.length === 1) topLevelKey = lastKey;
          expectKey = false;
        } else if (frames.length === 1 && topLevelKey === 'model') {
          modelSpan = [i, close + 1];
        }
        i = close;
        break;
      }
      case OPEN_OBJECT:
      case OPEN_ARRAY: {
        if (frames.length >= maxDepth) {
          throw new GatewayError(
            'TOLLGATE_ERR_BODY_TOO_DEEP',
            `The request body is nested deeper than the limit of ${maxDepth} levels.`,
          );
        }
        let flags = byte === OPEN_OBJECT ? IS_OBJECT : 0;
        if (byte === OPEN_OBJECT && lastKey === 'constructor' && !expectKey) flags |= IS_CONSTRUCTOR_VALUE;
        frames.push(flags);
        openKeys.open();
        expectKey = byte === OPEN_OBJECT;
        lastKey = null;
        break;
      }
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        frames.pop();
        openKeys.close();
        expectKey = false;
        lastKey = null;
        break;
      case COMMA: {
        const frame = frames.length > 0 ? frames[frames.length - 1] : 0;
        expectKey = (frame & IS_OBJECT) !== 0;
        if (frames.length === 1) topLevelKey = null;
        lastKey = null;
        break;
      }
      case COLON:
        break;
      default:
        break;
    }
  }
  return { modelSpan };
}

/** `raw` with the bytes of `span` replaced by `value` as a JSON string literal; nothing else changes. */
export function replaceModel(raw: Buffer, span: readonly [number, number], value: string): Buffer {
  return Buffer.concat([raw.subarray(0, span[0]), Buffer.from(JSON.stringify(value)), raw.subarray(span[1])]);
}
