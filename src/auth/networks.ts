/**
 * A key's allowed networks: CIDRs (IPv4 and IPv6) parsed once into numbers, and a client address
 * matched against them on every request without allocating. An IPv4-mapped IPv6 address
 * (`::ffff:10.1.2.3`, what a dual-stack socket reports for an IPv4 peer) is its IPv4 address, so it
 * matches IPv4 networks. IPv6 is held as four 32-bit words; a prefix compares whole words, then the
 * masked one.
 */

/** At most this many networks on one key: enough for any office list, small enough to scan. */
const MAX_NETWORKS = 500;

interface V4Network {
  readonly address: number;
  readonly mask: number;
}

interface V6Network {
  readonly words: Uint32Array;
  readonly prefix: number;
}

/** A compiled list; `matches` answers for one address. */
export class NetworkList {
  private constructor(
    private readonly v4: readonly V4Network[],
    private readonly v6: readonly V6Network[],
  ) {}

  /** Compiles CIDRs that `parseNetworks` accepted (a bad entry throws). */
  static compile(cidrs: readonly string[]): NetworkList {
    const v4: V4Network[] = [];
    const v6: V6Network[] = [];
    for (const cidr of cidrs) {
      const parsed = parseCidr(cidr);
      if (parsed === null) throw new Error(`not a network: "${cidr}"`);
      if ('mask' in parsed) v4.push(parsed);
      else v6.push(parsed);
    }
    return new NetworkList(v4, v6);
  }

  /** Whether `address` (as the request boundary reports it) is in one of the networks. */
  matches(address: string): boolean {
    const v4 = ipv4ToNumber(address, address.startsWith('::ffff:') && address.indexOf('.') > 0 ? 7 : 0);
    if (v4 !== null) {
      for (const network of this.v4) if (((v4 & network.mask) >>> 0) === network.address) return true;
      return false;
    }
    if (this.v6.length === 0 || !parseIpv6(address, SCRATCH)) return false;
    for (const network of this.v6) if (prefixMatches(SCRATCH, network)) return true;
    return false;
  }
}

/** The buffers an address is parsed into: the event loop runs one match at a time. */
const SCRATCH = new Uint32Array(4);
const GROUPS = new Uint16Array(8);

function prefixMatches(address: Uint32Array, network: V6Network): boolean {
  let bits = network.prefix;
  for (let word = 0; word < 4 && bits > 0; word += 1) {
    if (bits >= 32) {
      if (address[word] !== network.words[word]) return false;
      bits -= 32;
    } else {
      const mask = (0xffffffff << (32 - bits)) >>> 0;
      return ((address[word] & mask) >>> 0) === network.words[word];
    }
  }
  return true;
}

/** Dotted IPv4 from `start` to `end` of `text` as an unsigned number, or null. */
function ipv4ToNumber(text: string, start: number, end = text.length): number | null {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return null;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      dots += 1;
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48);
      digits += 1;
      if (part > 255 || digits > 3) return null;
    } else {
      return null;
    }
  }
  if (dots !== 3 || digits === 0) return null;
  return value * 256 + part;
}

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * IPv6 text (`::` shorthand, a trailing dotted IPv4, a `%zone` ignored) into four words of `out`;
 * false when it is not IPv6. Written by hand to allocate nothing on the request path.
 */
function parseIpv6(text: string, out: Uint32Array): boolean {
  let end = text.indexOf('%');
  if (end < 0) end = text.length;
  return parseGroups(text, end, GROUPS) && pack(GROUPS, out);
}

function pack(groups: Uint16Array, out: Uint32Array): boolean {
  for (let word = 0; word < 4; word += 1) out[word] = ((groups[2 * word] << 16) | groups[2 * word + 1]) >>> 0;
  return true;
}

/** Fills the eight 16-bit groups; false when `text` is not IPv6. */
function parseGroups(text: string, end: number, groups: Uint16Array): boolean {
  groups.fill(0);
  let count = 0;
  let gap = -1;
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return false;
    gap = 0;
    i = 2;
    if (i === end) return true;
  }
  while (i < end) {
    if (count === 8) return false;
    // A trailing IPv4 part fills the last two groups.
    const nextColon = text.indexOf(':', i);
    const groupEnd = nextColon < 0 || nextColon > end ? end : nextColon;
    if (groupEnd === end && text.indexOf('.', i) > 0 && text.indexOf('.', i) < end) {
      if (count > 6) return false;
      const v4 = ipv4ToNumber(text, i, end);
      if (v4 === null) return false;
      groups[count] = v4 >>> 16;
      groups[count + 1] = v4 & 0xffff;
      count += 2;
      break;
    }
    if (groupEnd === i || groupEnd - i > 4) return false;
    let value = 0;
    for (let j = i; j < groupEnd; j += 1) {
      const digit = hexDigit(text.charCodeAt(j));
      if (digit < 0) return false;
      value = value * 16 + digit;
    }
    groups[count] = value;
    count += 1;
    i = groupEnd;
    if (i < end) {
      i += 1;
      if (text.charCodeAt(i) === 58) {
        if (gap >= 0) return false;
        gap = count;
        i += 1;
      } else if (i === end) {
        return false;
      }
    }
  }
  if (gap < 0) return count === 8;
  if (count === 8) return false;
  const tail = count - gap;
  for (let k = 0; k < tail; k += 1) groups[7 - k] = groups[count - 1 - k];
  for (let k = gap; k < 8 - tail; k += 1) groups[k] = 0;
  return true;
}

/** One CIDR (or a bare address, a /32 or /128) as a network, with the host bits cleared; null if invalid. */
function parseCidr(text: string): V4Network | V6Network | null {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? null : text.slice(slash + 1);
  if (prefixText !== null && !/^\d{1,3}$/.test(prefixText)) return null;
  const v4 = ipv4ToNumber(address, 0);
  if (v4 !== null) {
    const prefix = prefixText === null ? 32 : Number(prefixText);
    if (prefix > 32) return null;
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    return { address: (v4 & mask) >>> 0, mask };
  }
  const words = new Uint32Array(4);
  if (address.includes('%') || !parseIpv6(address, words)) return null;
  const prefix = prefixText === null ? 128 : Number(prefixText);
  if (prefix > 128) return null;
  // An IPv4-mapped network (::ffff:10.0.0.0/104) is the IPv4 network it maps.
  if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff && prefix >= 96) {
    const v4prefix = prefix - 96;
    const mask = v4prefix === 0 ? 0 : (0xffffffff << (32 - v4prefix)) >>> 0;
    return { address: (words[3] & mask) >>> 0, mask };
  }
  let bits = prefix;
  for (let word = 0; word < 4; word += 1) {
    const keep = Math.max(0, Math.min(32, bits));
    words[word] = keep === 0 ? 0 : keep === 32 ? words[word] : (words[word] & ((0xffffffff << (32 - keep)) >>> 0)) >>> 0;
    bits -= 32;
  }
  return { words, prefix };
}

/** Why a list of networks is refused, or null when every entry is a network. */
export function networkListProblem(cidrs: readonly string[]): string | null {
  if (cidrs.length === 0) return 'name at least one network, or none for anywhere';
  if (cidrs.length > MAX_NETWORKS) return `at most ${MAX_NETWORKS} networks`;
  const bad = cidrs.find((cidr) => parseCidr(cidr) === null);
  return bad === undefined ? null : `"${bad.slice(0, 60)}" is not a network (10.0.0.0/8, 2001:db8::/32, or one address)`;
}
