/**
 * One pass over the raw JSON bytes, before `JSON.parse`, that finds what parsing alone cannot tell: nesting
 * deeper than the limit, prototype-poisoning keys (docs/faults.md#b3, docs/faults.md#b4), and the byte span
 * of the top-level `"model"` value so a native route can rename the model without re-serialising. It is not a
 * validator: malformed JSON is left to `JSON.parse`, and the scan only has to stay safe on it.
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

/** The decoded text of a key; escapes (`"\u005f_proto__"`) must not smuggle a forbidden name past us. */
function keyText(buf: Buffer, open: number, close: number): string {
  // Search only inside the key: a search to the end of the body would make many keys quadratic.
  if (buf.subarray(open, close).indexOf(BACKSLASH) === -1) return buf.toString('latin1', open + 1, close);
  try {
    return JSON.parse(buf.toString('utf8', open, close + 1)) as string;
  } catch {
    return '';
  }
}

function forbidden(name: string): GatewayError {
  return new GatewayError(
    'TOLLGATE_ERR_BODY_FORBIDDEN_KEY',
    `The request body contains the key "${name}", which is not allowed.`,
  );
}

/** Scans `buf`; throws a GatewayError (400) for excessive depth or a forbidden key. */
export function scanJson(buf: Buffer, maxDepth: number): JsonScan {
  const frames: number[] = [];
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
        expectKey = byte === OPEN_OBJECT;
        lastKey = null;
        break;
      }
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        frames.pop();
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
