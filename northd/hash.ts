// A deterministic 128-bit content hash for naming SB rows (Logical_Flow and friends), so every
// replica names the same row the same way without crypto, time or randomness. The algorithm is
// Austin Appleby's MurmurHash3, x86 128-bit variant, written with 32-bit integer operations.
import assert from 'node:assert/strict';
import { lowerBound } from '../ovsdb/atom.js';
import { recordSetEdit } from '../ovsdb/datum.js';
import { uuidFromCodes } from '../ovsdb/uuid-source.js';

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

function rotl32(x: number, r: number): number {
  return ((x << r) | (x >>> (32 - r))) >>> 0;
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function word(bytes: Uint8Array, i: number): number {
  // Callers read whole blocks within `len`, itself within the array.
  return ((bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24)) >>> 0;
}

/** MurmurHash3_x86_128 of `bytes` (its first `len`) with `seed`: the four 32-bit output words h1..h4. */
export function murmur3x86x128(bytes: Uint8Array, seed = 0, len = bytes.length): [number, number, number, number] {
  murmurInto(bytes, seed, len, digest);
  return [digest[0] as number, digest[1] as number, digest[2] as number, digest[3] as number];
}

/**
 * Where the digest of the UUID paths goes: words above 2^31 held in an array or passed around
 * would each be a heap number, four per row named. Scratch, like `scratch` below.
 */
const digest = new Uint32Array(4);

/** murmur3x86x128 into `out` (h1..h4). */
function murmurInto(bytes: Uint8Array, seed: number, len: number, out: Uint32Array): void {
  assert(len <= bytes.length, 'murmur3x86x128: len beyond the bytes');
  const nblocks = len >>> 4;
  let h1 = seed >>> 0;
  let h2 = seed >>> 0;
  let h3 = seed >>> 0;
  let h4 = seed >>> 0;

  // The scratch area's words are read whole where the host is little-endian (as the hash reads
  // them): blocks start at multiples of 16 from its (aligned) start.
  const words = bytes === scratch && LITTLE_ENDIAN ? scratchWords : undefined;
  for (let b = 0; b < nblocks; b++) {
    const i = b * 16;
    let k1: number;
    let k2: number;
    let k3: number;
    let k4: number;
    if (words !== undefined) {
      k1 = words[i >> 2] as number;
      k2 = words[(i >> 2) + 1] as number;
      k3 = words[(i >> 2) + 2] as number;
      k4 = words[(i >> 2) + 3] as number;
    } else {
      k1 = word(bytes, i);
      k2 = word(bytes, i + 4);
      k3 = word(bytes, i + 8);
      k4 = word(bytes, i + 12);
    }

    k1 = Math.imul(k1, C1); k1 = rotl32(k1, 15); k1 = Math.imul(k1, C2); h1 ^= k1;
    h1 = rotl32(h1, 19); h1 = (h1 + h2) >>> 0; h1 = (Math.imul(h1, 5) + 0x561ccd1b) >>> 0;
    k2 = Math.imul(k2, C2); k2 = rotl32(k2, 16); k2 = Math.imul(k2, C3); h2 ^= k2;
    h2 = rotl32(h2, 17); h2 = (h2 + h3) >>> 0; h2 = (Math.imul(h2, 5) + 0x0bcaa747) >>> 0;
    k3 = Math.imul(k3, C3); k3 = rotl32(k3, 17); k3 = Math.imul(k3, C4); h3 ^= k3;
    h3 = rotl32(h3, 15); h3 = (h3 + h4) >>> 0; h3 = (Math.imul(h3, 5) + 0x96cd1c35) >>> 0;
    k4 = Math.imul(k4, C4); k4 = rotl32(k4, 18); k4 = Math.imul(k4, C1); h4 ^= k4;
    h4 = rotl32(h4, 13); h4 = (h4 + h1) >>> 0; h4 = (Math.imul(h4, 5) + 0x32ac3b17) >>> 0;
  }

  // The tail: up to 15 bytes, little-endian into k1..k4.
  const tail = nblocks * 16;
  const rest = len & 15;
  let k1 = 0;
  let k2 = 0;
  let k3 = 0;
  let k4 = 0;
  for (let j = rest - 1; j >= 0; j--) {
    const byte = bytes[tail + j] ?? 0;
    if (j >= 12) k4 ^= byte << ((j - 12) * 8);
    else if (j >= 8) k3 ^= byte << ((j - 8) * 8);
    else if (j >= 4) k2 ^= byte << ((j - 4) * 8);
    else k1 ^= byte << (j * 8);
  }
  if (rest > 12) { k4 = Math.imul(k4, C4); k4 = rotl32(k4, 18); k4 = Math.imul(k4, C1); h4 ^= k4; }
  if (rest > 8) { k3 = Math.imul(k3, C3); k3 = rotl32(k3, 17); k3 = Math.imul(k3, C4); h3 ^= k3; }
  if (rest > 4) { k2 = Math.imul(k2, C2); k2 = rotl32(k2, 16); k2 = Math.imul(k2, C3); h2 ^= k2; }
  if (rest > 0) { k1 = Math.imul(k1, C1); k1 = rotl32(k1, 15); k1 = Math.imul(k1, C2); h1 ^= k1; }

  h1 = (h1 ^ len) >>> 0; h2 = (h2 ^ len) >>> 0; h3 = (h3 ^ len) >>> 0; h4 = (h4 ^ len) >>> 0;
  h1 = (h1 + h2 + h3 + h4) >>> 0;
  h2 = (h2 + h1) >>> 0; h3 = (h3 + h1) >>> 0; h4 = (h4 + h1) >>> 0;
  h1 = fmix32(h1); h2 = fmix32(h2); h3 = fmix32(h3); h4 = fmix32(h4);
  h1 = (h1 + h2 + h3 + h4) >>> 0;
  h2 = (h2 + h1) >>> 0; h3 = (h3 + h1) >>> 0; h4 = (h4 + h1) >>> 0;
  out[0] = h1;
  out[1] = h2;
  out[2] = h3;
  out[3] = h4;
}

const encoder = new TextEncoder();

/**
 * Where texts are encoded for hashing, so that naming tens of thousands of rows allocates no
 * byte array per row. A scratch area, not state: every call overwrites what it reads and
 * nothing in it outlives the call. Longer texts are encoded into a fresh array.
 */
const scratchBytes = 4096;
const scratch = new Uint8Array(scratchBytes);
/** The scratch area as 32-bit words, in the host's byte order. */
const scratchWords = new Uint32Array(scratch.buffer);
/**
 * The scratch area from each offset to its end, made once: encodeInto writes at the start of
 * the array it is given, and a view made per text (a quarter of a million per full run) was
 * garbage as large as the flows' own strings.
 */
const scratchFrom: readonly Uint8Array[] = Array.from({ length: scratchBytes }, (_, at) => scratch.subarray(at));
/** Whether the host stores words little-endian, as MurmurHash3 reads them. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** ASCII codes of the hex digits. */
const HEX_CODES = new Uint8Array([...'0123456789abcdef'].map((c) => c.charCodeAt(0)));
/** The 36 character codes of a UUID being written (dashes in place). */
const uuidCodes = new Uint16Array(36).fill('-'.charCodeAt(0));
/** Where each of the 32 hex digits of a UUID goes. */
const UUID_DIGIT_AT: readonly number[] = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35];

/**
 * The UUID text of the digest's four words, most significant digit first, with the RFC 4122
 * version-4 and variant bits set.
 */
function uuidOfDigest(): string {
  const w0 = digest[0] as number;
  const w2 = ((digest[1] as number) & 0xffff0fff) | 0x00004000;
  const w3 = ((digest[2] as number) & 0x3fffffff) | 0x80000000;
  const w4 = digest[3] as number;
  for (let d = 0; d < 8; d++) {
    const shift = 28 - 4 * d;
    uuidCodes[UUID_DIGIT_AT[d] as number] = HEX_CODES[(w0 >>> shift) & 0xf] as number;
    uuidCodes[UUID_DIGIT_AT[d + 8] as number] = HEX_CODES[(w2 >>> shift) & 0xf] as number;
    uuidCodes[UUID_DIGIT_AT[d + 16] as number] = HEX_CODES[(w3 >>> shift) & 0xf] as number;
    uuidCodes[UUID_DIGIT_AT[d + 24] as number] = HEX_CODES[(w4 >>> shift) & 0xf] as number;
  }
  return uuidFromCodes(uuidCodes);
}

/** MurmurHash3 x86-128 of the UTF-8 bytes of `text`. */
export function murmur3x86x128Text(text: string, seed = 0): [number, number, number, number] {
  // A UTF-16 unit is at most 3 UTF-8 bytes, so a text this short always fits.
  if (text.length * 3 <= scratchBytes) {
    const { written } = encoder.encodeInto(text, scratch);
    return murmur3x86x128(scratch, seed, written);
  }
  return murmur3x86x128(encoder.encode(text), seed);
}

/**
 * A UUID-shaped name for a list of strings: the MurmurHash3 x86-128 of their UTF-8 bytes,
 * each part length-prefixed so ("ab","c") and ("a","bc") differ, with the RFC 4122 version-4
 * and variant bits set so the result is a valid OVSDB UUID.
 */
export function hashUuid(parts: readonly string[]): string {
  // The parts' text written straight into the scratch area when it is ASCII and fits (names,
  // UUIDs, flow matches and actions): no concatenated text to build and flatten first.
  let at = 0;
  for (let i = 0; i < parts.length && at >= 0; i++) at = putPart(parts[i] as string, at);
  if (at >= 0) return uuidOfScratch(at);
  let text = '';
  for (const p of parts) text += `${p.length}:${p};`;
  const bytes = encoder.encode(text);
  murmurInto(bytes, 0, bytes.length, digest);
  return uuidOfDigest();
}

/** hashUuid of five parts, without an array of them (a Logical_Flow's UUID and version). */
export function hashUuid5(a: string, b: string, c: string, d: string, e: string): string {
  let at = putPart(a, 0);
  at = at < 0 ? at : putPart(b, at);
  at = at < 0 ? at : putPart(c, at);
  at = at < 0 ? at : putPart(d, at);
  at = at < 0 ? at : putPart(e, at);
  return at >= 0 ? uuidOfScratch(at) : hashUuid([a, b, c, d, e]);
}

/** hashUuid of six parts, without an array of them. */
export function hashUuid6(a: string, b: string, c: string, d: string, e: string, f: string): string {
  let at = putPart(a, 0);
  at = at < 0 ? at : putPart(b, at);
  at = at < 0 ? at : putPart(c, at);
  at = at < 0 ? at : putPart(d, at);
  at = at < 0 ? at : putPart(e, at);
  at = at < 0 ? at : putPart(f, at);
  return at >= 0 ? uuidOfScratch(at) : hashUuid([a, b, c, d, e, f]);
}

/** ASCII code of ':' and ';'. */
const COLON = 58;
const SEMICOLON = 59;
const DIGIT_0 = 48;
/** The longest decimal length prefix: a string is shorter than 2^30 units. */
const LENGTH_DIGITS_MAX = 10;

/**
 * Writes `${p.length}:${p};` as ASCII bytes at `at` of the scratch area and returns where it
 * ends, or -1 when `p` is not all ASCII (its UTF-8 bytes differ from its units) or the text
 * would not fit: the caller then takes the general path.
 */
function putPart(p: string, at: number): number {
  const n = p.length;
  if (at + n + LENGTH_DIGITS_MAX + 2 > scratchBytes) return -1;
  // The length in decimal, most significant digit first.
  let digits = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
  for (let x = n, k = at + digits - 1; k >= at; k--, x = Math.floor(x / 10)) scratch[k] = DIGIT_0 + (x % 10);
  at += digits;
  scratch[at++] = COLON;
  at = putAscii(p, at);
  if (at < 0) return -1;
  scratch[at++] = SEMICOLON;
  return at;
}

/** From this many units, text is copied by encodeInto (native, several times faster) rather than unit by unit. */
const ENCODE_INTO_MIN = 24;

/**
 * Writes `text` as ASCII bytes at `at` of the scratch area (the caller checked it fits) and
 * returns where it ends, or -1 when it is not all ASCII.
 */
function putAscii(text: string, at: number): number {
  const n = text.length;
  if (n >= ENCODE_INTO_MIN) {
    // All ASCII exactly when every unit took one byte and all were read. Text that is not may
    // write past `at + n`, within the scratch area: the caller then starts over elsewhere.
    const { read, written } = encoder.encodeInto(text, scratchFrom[at] as Uint8Array);
    return read === n && written === n ? at + n : -1;
  }
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return -1;
    scratch[at++] = c;
  }
  return at;
}

function uuidOfScratch(len: number): string {
  murmurInto(scratch, 0, len, digest);
  return uuidOfDigest();
}

/** Receives, piece by piece, a text being hashed. */
export interface TextSink {
  put(piece: string): void;
  /** Puts `JSON.stringify(text)`, without building it when it needs no escapes. */
  putString(text: string): void;
}

const QUOTE = 34;
const BACKSLASH = 92;

/** The sink writing into the scratch area, from `at`; `ok` false once a piece did not fit or was not ASCII. */
class ScratchSink implements TextSink {
  at = 0;
  ok = true;

  put(piece: string): void {
    if (!this.ok) return;
    const n = piece.length;
    // Room for the piece and the closing ';'.
    if (this.at + n + 1 > scratchBytes) {
      this.ok = false;
      return;
    }
    const at = putAscii(piece, this.at);
    if (at < 0) this.ok = false;
    else this.at = at;
  }

  putString(text: string): void {
    if (!this.ok) return;
    const n = text.length;
    // Room for the quotes and the closing ';'.
    if (this.at + n + 3 > scratchBytes) {
      this.ok = false;
      return;
    }
    let at = this.at;
    scratch[at++] = QUOTE;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x20 || c === QUOTE || c === BACKSLASH || c >= 0x80) {
        // Escaped (or not ASCII, which the general path takes): JSON.stringify's text.
        this.put(JSON.stringify(text));
        return;
      }
      scratch[at++] = c;
    }
    scratch[at++] = QUOTE;
    this.at = at;
  }
}

const scratchSink = new ScratchSink();

/**
 * hashUuid([head, text]) where `text` is what `write(sink, value)` puts into the sink: written
 * straight into the scratch area when it is ASCII and fits, so the text (a row's canonical
 * text, hundreds of bytes, thrown away once hashed) is never built as a string. `write` must
 * not hash anything itself (it would overwrite the scratch area).
 */
export function hashUuidOfWritten<T>(head: string, value: T, write: (sink: TextSink, value: T) => void): string {
  const at = putPart(head, 0);
  if (at >= 0) {
    // The text goes after room for its length prefix, which is known only at its end.
    const textStart = at + LENGTH_DIGITS_MAX + 1;
    scratchSink.at = textStart;
    scratchSink.ok = textStart < scratchBytes;
    write(scratchSink, value);
    if (scratchSink.ok) {
      const end = scratchSink.at;
      const n = end - textStart;
      let digits = 1;
      for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
      const prefixStart = textStart - digits - 1;
      for (let x = n, k = textStart - 2; k >= prefixStart; k--, x = Math.floor(x / 10)) scratch[k] = DIGIT_0 + (x % 10);
      scratch[textStart - 1] = COLON;
      scratch.copyWithin(at, prefixStart, end);
      const len = at + (end - prefixStart);
      scratch[len] = SEMICOLON;
      return uuidOfScratch(len + 1);
    }
  }
  const pieces: string[] = [];
  write({ put: (piece) => void pieces.push(piece), putString: (text) => void pieces.push(JSON.stringify(text)) }, value);
  return hashUuid([head, pieces.join('')]);
}

/**
 * An order-free sum over a set of strings: each member read as four 32-bit words, added word
 * by word. It names the set well and follows joins and leaves in constant time: a set of ten
 * thousand gains one member without reading the others again.
 */
export type SetSum = readonly [number, number, number, number];

export const EMPTY_SET_SUM: SetSum = Object.freeze([0, 0, 0, 0] as const);

/** The words of a UUID that is itself a hash (a datapath's, a port binding's): its 128 bits. */
export function uuidWords(uuid: string): SetSum {
  const hex = uuid.replace(/-/g, '');
  return [0, 1, 2, 3].map((i) => parseInt(hex.slice(i * 8, i * 8 + 8), 16)) as unknown as SetSum;
}

/** A seed of its own: a member's words are not the digest hashUuid would make of it. */
const TEXT_SET_SEED = 0x5e75;

/** The words of any text (a port name, an address): its MurmurHash3 x86-128 digest. */
export function textWords(text: string): SetSum {
  return murmur3x86x128Text(text, TEXT_SET_SEED);
}

/**
 * The _version of SB row `uuid` of `table` that is one set under its name (Logical_DP_Group,
 * Multicast_Group, Port_Group, Address_Set): its member count and set sum. Every other column
 * of such a row is named by its UUID.
 */
export function setVersion(table: string, uuid: string, count: number, sum: SetSum): string {
  return hashUuid([table, uuid, String(count), ...sum.map(String)]);
}

/** The value of a hex digit (either case), or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}


/**
 * Adds `sign` times the words of `uuid` (uuidWords) into `w`, read digit by digit from the
 * text: no digits-only copy, slices or array per member. False, with `w` untouched, when `uuid`
 * is not 36 characters with its 32 hex digits in place: the caller takes uuidWords then.
 */
function addUuidWords(w: number[], uuid: string, sign: 1 | -1): boolean {
  if (uuid.length !== 36 || uuid.charCodeAt(8) !== 45 || uuid.charCodeAt(13) !== 45 || uuid.charCodeAt(18) !== 45 || uuid.charCodeAt(23) !== 45) return false;
  let w0 = 0;
  let w1 = 0;
  let w2 = 0;
  let w3 = 0;
  for (let d = 0; d < 8; d++) {
    const a = hexDigit(uuid.charCodeAt(UUID_DIGIT_AT[d] as number));
    const b = hexDigit(uuid.charCodeAt(UUID_DIGIT_AT[d + 8] as number));
    const c = hexDigit(uuid.charCodeAt(UUID_DIGIT_AT[d + 16] as number));
    const e = hexDigit(uuid.charCodeAt(UUID_DIGIT_AT[d + 24] as number));
    if ((a | b | c | e) < 0) return false;
    // Multiplied, not shifted: a shift would wrap words of 2^31 and more to negative numbers.
    w0 = w0 * 16 + a;
    w1 = w1 * 16 + b;
    w2 = w2 * 16 + c;
    w3 = w3 * 16 + e;
  }
  w[0] = ((w[0] as number) + sign * w0) >>> 0;
  w[1] = ((w[1] as number) + sign * w1) >>> 0;
  w[2] = ((w[2] as number) + sign * w2) >>> 0;
  w[3] = ((w[3] as number) + sign * w3) >>> 0;
  return true;
}

/**
 * `sum` with `members` added (sign 1) or taken away (sign -1). UUID members are read in place
 * (addUuidWords): a new switch joins every class of its shard's template flows, and the words
 * array, digits-only copy and slices of each join were 0.8 of the 11.3 MB an entry of 1,000
 * new switches allocated.
 */
export function setSumWith(sum: SetSum, members: Iterable<string>, sign: 1 | -1, words: (member: string) => SetSum = uuidWords): SetSum {
  const w = [sum[0], sum[1], sum[2], sum[3]];
  for (const m of members) {
    if (words === uuidWords && addUuidWords(w, m, sign)) continue;
    const x = words(m);
    for (let i = 0; i < 4; i++) w[i] = ((w[i] as number) + sign * (x[i] as number)) >>> 0;
  }
  return w as unknown as SetSum;
}

/** Changes a SummedSet splices into its sorted list; more since the last read sort it afresh. */
const SUMMED_SET_SPLICES_MAX = 64;

/**
 * A set of strings with its set sum, and its members sorted (as an OVSDB set column lists
 * them) when read: a member joins or leaves in constant time, the sum follows, and a read after
 * a few changes splices them in by binary search, after many sorts once.
 */
export class SummedSet {
  private readonly members = new Set<string>();
  private total: SetSum = EMPTY_SET_SUM;
  private list: string[] = [];
  /** Changes since `list` was last brought up to date, in order: +1 joined, -1 left. */
  private changes: Array<readonly [string, 1 | -1]> = [];
  /** The last copy() and the changes since it (undefined once there are too many to keep). */
  private copied: readonly string[] | undefined;
  private sinceCopy: Array<readonly [string, 1 | -1]> | undefined = [];

  constructor(private readonly words: (member: string) => SetSum) {}

  /** The members, sorted; the caller copies what it keeps. */
  get items(): readonly string[] {
    if (this.changes.length > SUMMED_SET_SPLICES_MAX) this.list = [...this.members].sort();
    else for (const [x, sign] of this.changes) this.splice(x, sign);
    this.changes = [];
    return this.list;
  }

  /**
   * The members, sorted, in an array of the caller's that the set never changes. When the
   * previous copy and the changes since are known, the new copy is recorded as that copy with
   * them (ovsdb/datum.ts recordSetEdit): whoever compares the two rows (the agent stream's set
   * differences) then reads the few members that changed, not both lists.
   */
  copy(): string[] {
    const next = this.items.slice();
    const since = this.sinceCopy;
    if (this.copied !== undefined && since !== undefined) {
      const net = new Map<string, number>();
      for (const [x, sign] of since) net.set(x, (net.get(x) ?? 0) + sign);
      const added: string[] = [];
      const removed: string[] = [];
      for (const [x, n] of net) {
        if (n > 0) added.push(x);
        else if (n < 0) removed.push(x);
      }
      recordSetEdit(next, this.copied, added.sort(), removed.sort());
    }
    this.copied = next;
    this.sinceCopy = [];
    return next;
  }

  get sum(): SetSum {
    return this.total;
  }

  get size(): number {
    return this.members.size;
  }

  /** Adds `x`; false when it was there already. */
  add(x: string): boolean {
    if (this.members.has(x)) return false;
    this.members.add(x);
    this.total = setSumWith(this.total, [x], 1, this.words);
    this.changes.push([x, 1]);
    this.noteSinceCopy(x, 1);
    return true;
  }

  /** Removes `x`; false when it was not there. */
  delete(x: string): boolean {
    if (!this.members.delete(x)) return false;
    this.total = setSumWith(this.total, [x], -1, this.words);
    this.changes.push([x, -1]);
    this.noteSinceCopy(x, -1);
    return true;
  }

  private noteSinceCopy(x: string, sign: 1 | -1): void {
    const since = this.sinceCopy;
    if (since === undefined) return;
    if (since.length < SUMMED_SET_SPLICES_MAX) since.push([x, sign]);
    else this.sinceCopy = undefined;
  }

  private splice(x: string, sign: 1 | -1): void {
    const lo = lowerBound(this.list, x);
    if (sign === 1 && this.list[lo] !== x) this.list.splice(lo, 0, x);
    else if (sign === -1 && this.list[lo] === x) this.list.splice(lo, 1);
  }
}

/**
 * How many chunks `n` items are dealt into: 1 up to `min`, else the least power of two that
 * gives each chunk at most `per` items, at most `max` chunks. Chunks let one changed item
 * rebuild one chunk's flows rather than all of them (load balancer VIPs, static routes).
 */
export function chunkCount(n: number, limits: { readonly min: number; readonly per: number; readonly max: number }): number {
  if (n <= limits.min) return 1;
  let c = 1;
  while (c * limits.per < n && c < limits.max) c *= 2;
  return c;
}

/** The chunk of an item by its key, among `count` (a power of two): FNV-1a, the same on every member and in every run. */
export function chunkOfKey(key: string, count: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) & (count - 1);
}
