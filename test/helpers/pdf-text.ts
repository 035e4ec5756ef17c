/**
 * The text of a PDF, read well enough for tests to check what a statement printed: the content
 * streams inflated, each font's ToUnicode map applied (Chromium's print writes glyph ids), single-byte
 * strings read as Latin-1 otherwise (pdfkit's standard fonts). Not a general PDF reader: no
 * encryption, no cross-reference streams beyond object streams, no vertical writing.
 */
import { inflateSync } from 'node:zlib';

type CMap = { readonly width: number; readonly map: ReadonlyMap<number, string> };

/** Every object's text (`N 0 obj … endobj`), its stream inflated when it has one; object streams unpacked. */
function objectsOf(pdf: Buffer): Map<number, { dict: string; stream: Buffer | null }> {
  const text = pdf.toString('latin1');
  const objects = new Map<number, { dict: string; stream: Buffer | null }>();
  const pattern = /(\d+) 0 obj\b([\s\S]*?)endobj/g;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const body = match[2];
    const at = body.search(/stream\r?\n/);
    if (at === -1) {
      objects.set(Number(match[1]), { dict: body, stream: null });
      continue;
    }
    const dict = body.slice(0, at);
    const start = match.index + match[0].indexOf(body) + at + (body.slice(at).startsWith('stream\r\n') ? 8 : 7);
    const length = /\/Length (\d+)(?! \d+ R)/.exec(dict);
    const end = length === null ? text.indexOf('endstream', start) : start + Number(length[1]);
    const raw = pdf.subarray(start, end);
    const stream = /\/FlateDecode/.test(dict) ? inflateSync(raw) : raw;
    objects.set(Number(match[1]), { dict, stream });
    if (/\/Type\s*\/ObjStm/.test(dict)) unpackObjectStream(dict, stream, objects);
  }
  return objects;
}

function unpackObjectStream(dict: string, stream: Buffer, objects: Map<number, { dict: string; stream: Buffer | null }>): void {
  const count = Number(/\/N (\d+)/.exec(dict)?.[1] ?? 0);
  const first = Number(/\/First (\d+)/.exec(dict)?.[1] ?? 0);
  const body = stream.toString('latin1');
  const header = body.slice(0, first).trim().split(/\s+/).map(Number);
  for (let index = 0; index < count; index += 1) {
    const start = first + header[index * 2 + 1];
    const end = index + 1 < count ? first + header[index * 2 + 3] : body.length;
    objects.set(header[index * 2], { dict: body.slice(start, end), stream: null });
  }
}

function hexCodes(hex: string): number[] {
  const clean = hex.replace(/\s+/g, '');
  return Array.from({ length: Math.ceil(clean.length / 2) }, (_, index) => parseInt(clean.slice(index * 2, index * 2 + 2).padEnd(2, '0'), 16));
}

function utf16(hex: string): string {
  const bytes = hexCodes(hex);
  let text = '';
  for (let index = 0; index + 1 < bytes.length; index += 2) text += String.fromCharCode((bytes[index] << 8) | bytes[index + 1]);
  return text;
}

function parseCMap(text: string): CMap {
  const map = new Map<number, string>();
  const space = /begincodespacerange\s*<([0-9a-fA-F]+)>/.exec(text);
  const width = space === null ? 2 : space[1].length / 2;
  for (const block of text.matchAll(/beginbfchar([\s\S]*?)endbfchar/g)) {
    for (const entry of block[1].matchAll(/<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]*)>/g)) map.set(parseInt(entry[1], 16), utf16(entry[2]));
  }
  for (const block of text.matchAll(/beginbfrange([\s\S]*?)endbfrange/g)) {
    for (const entry of block[1].matchAll(/<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>\s*(<[0-9a-fA-F]*>|\[[^\]]*\])/g)) {
      const low = parseInt(entry[1], 16);
      const high = parseInt(entry[2], 16);
      if (entry[3].startsWith('[')) {
        [...entry[3].matchAll(/<([0-9a-fA-F]*)>/g)].forEach((target, offset) => map.set(low + offset, utf16(target[1])));
      } else {
        const base = utf16(entry[3].slice(1, -1));
        for (let code = low; code <= high; code += 1) map.set(code, base.slice(0, -1) + String.fromCharCode(base.charCodeAt(base.length - 1) + code - low));
      }
    }
  }
  return { width, map };
}

/** Font resource names (`F1`) → their ToUnicode maps, over every resource dictionary of the file. */
function fontMaps(objects: Map<number, { dict: string; stream: Buffer | null }>): Map<string, CMap | null> {
  const fonts = new Map<string, CMap | null>();
  for (const { dict } of objects.values()) {
    for (const block of dict.matchAll(/\/Font\s*<<([^>]*)>>/g)) {
      for (const entry of block[1].matchAll(/\/([^\s/]+)\s+(\d+) 0 R/g)) {
        const font = objects.get(Number(entry[2]))?.dict ?? '';
        const toUnicode = /\/ToUnicode (\d+) 0 R/.exec(font);
        const stream = toUnicode === null ? null : objects.get(Number(toUnicode[1]))?.stream;
        fonts.set(entry[1], stream === null || stream === undefined ? null : parseCMap(stream.toString('latin1')));
      }
    }
  }
  return fonts;
}

function decode(bytes: readonly number[], cmap: CMap | null): string {
  if (cmap === null) return String.fromCharCode(...bytes);
  let text = '';
  for (let index = 0; index + cmap.width <= bytes.length; index += cmap.width) {
    let code = 0;
    for (let byte = 0; byte < cmap.width; byte += 1) code = (code << 8) | bytes[index + byte];
    text += cmap.map.get(code) ?? '';
  }
  return text;
}

function literalBytes(literal: string): number[] {
  const bytes: number[] = [];
  for (let index = 0; index < literal.length; index += 1) {
    const char = literal[index];
    if (char !== '\\') {
      bytes.push(char.charCodeAt(0));
      continue;
    }
    const next = literal[++index];
    const escapes: Record<string, number> = { n: 10, r: 13, t: 9, b: 8, f: 12, '(': 40, ')': 41, '\\': 92 };
    if (next in escapes) bytes.push(escapes[next]);
    else if (/[0-7]/.test(next)) {
      const octal = /^[0-7]{1,3}/.exec(literal.slice(index))![0];
      bytes.push(parseInt(octal, 8));
      index += octal.length - 1;
    }
  }
  return bytes;
}

/** The PDF's text, one line per text positioning, in the order its content streams draw it. */
export function pdfText(pdf: Buffer): string {
  const objects = objectsOf(pdf);
  const fonts = fontMaps(objects);
  const lines: string[] = [];
  const tokens = /\/([^\s/<>[\]()]+)\s+[\d.]+\s+Tf|<([0-9a-fA-F\s]*)>|\(((?:\\.|[^\\)])*)\)|(-?[\d.]+)|(TJ|Tj|'|"|Td|TD|T\*|Tm|ET|\[|\])/g;
  for (const { dict, stream } of objects.values()) {
    if (stream === null || /\/(ToUnicode|Type\s*\/ObjStm|Subtype\s*\/(Image|Type1C|CIDFontType0C|OpenType)|Length1)/.test(dict)) continue;
    const content = stream.toString('latin1');
    if (!/\bBT\b/.test(content)) continue;
    let font: CMap | null = null;
    let line = '';
    for (const token of content.matchAll(tokens)) {
      if (token[1] !== undefined) font = fonts.get(token[1]) ?? null;
      else if (token[2] !== undefined) line += decode(hexCodes(token[2]), font);
      else if (token[3] !== undefined) line += decode(literalBytes(token[3]), font);
      // A large negative adjustment inside TJ is a gap between words.
      else if (token[4] !== undefined && Number(token[4]) < -200) line += ' ';
      else if (token[5] !== undefined && /^(Td|TD|T\*|Tm|ET)$/.test(token[5]) && line !== '') (lines.push(line), (line = ''));
    }
    if (line !== '') lines.push(line);
  }
  return lines.join('\n');
}
