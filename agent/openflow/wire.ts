// Byte-level reading and writing for the OpenFlow codec. The reader is bounded: every read checks
// the bytes that remain and throws OfDecodeError rather than reading past the end, so a decoder
// built on it can only fail with the typed error, and it always advances, so it cannot loop.

/** Why a decoder rejected its input. */
export const ofDecodeErrorKinds = ['truncated', 'bad_length', 'bad_value', 'unsupported', 'too_large'] as const;
export type OfDecodeErrorKind = (typeof ofDecodeErrorKinds)[number];

/** Malformed or unsupported bytes; the only error a decoder in this folder throws on bad input. */
export class OfDecodeError extends Error {
  override readonly name = 'OfDecodeError';
  constructor(readonly kind: OfDecodeErrorKind, message: string) {
    super(`${kind}: ${message}`);
  }
}

export function decodeFail(kind: OfDecodeErrorKind, message: string): never {
  throw new OfDecodeError(kind, message);
}

/** Runs a decoder and turns its typed error into a value; other errors (bugs) propagate. */
export function tryDecode<T>(f: () => T): { ok: true; value: T } | { ok: false; error: OfDecodeError } {
  try {
    return { ok: true, value: f() };
  } catch (err) {
    if (err instanceof OfDecodeError) return { ok: false, error: err };
    throw err;
  }
}

export class Reader {
  private pos: number;
  private readonly end: number;

  constructor(readonly buf: Buffer, start = 0, end = buf.length) {
    if (start < 0 || end > buf.length || start > end) decodeFail('bad_length', `window ${start}..${end} outside ${buf.length} bytes`);
    this.pos = start;
    this.end = end;
  }

  get offset(): number {
    return this.pos;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number, what: string): number {
    if (n < 0 || this.pos + n > this.end) decodeFail('truncated', `${what}: need ${n} bytes, ${this.end - this.pos} left`);
    const at = this.pos;
    this.pos += n;
    return at;
  }

  u8(what = 'u8'): number {
    return this.buf[this.need(1, what)] as number;
  }

  u16(what = 'u16'): number {
    return this.buf.readUInt16BE(this.need(2, what));
  }

  u32(what = 'u32'): number {
    return this.buf.readUInt32BE(this.need(4, what));
  }

  u64(what = 'u64'): bigint {
    return this.buf.readBigUInt64BE(this.need(8, what));
  }

  /** An unsigned big-endian integer of n bytes (any n). */
  uint(n: number, what = 'uint'): bigint {
    return readUintBE(this.buf, this.need(n, what), n);
  }

  bytes(n: number, what = 'bytes'): Buffer {
    const at = this.need(n, what);
    return this.buf.subarray(at, at + n);
  }

  skip(n: number, what = 'padding'): void {
    this.need(n, what);
  }

  /** A sub-reader over the next n bytes; this reader moves past them. */
  sub(n: number, what = 'sub'): Reader {
    const at = this.need(n, what);
    return new Reader(this.buf, at, at + n);
  }

  /** Skips padding up to a multiple of 8 bytes counted from 'from', without overrunning. */
  alignFrom(from: number, what = 'padding'): void {
    const pad = (8 - ((this.pos - from) % 8)) % 8;
    this.need(Math.min(pad, this.remaining), what);
  }
}

export function readUintBE(buf: Buffer, at: number, n: number): bigint {
  if (n <= 6) return n === 0 ? 0n : BigInt(buf.readUIntBE(at, n));
  if (n === 8) return buf.readBigUInt64BE(at);
  let v = 0n;
  let i = 0;
  for (; i + 8 <= n; i += 8) v = (v << 64n) | buf.readBigUInt64BE(at + i);
  for (; i < n; i++) v = (v << 8n) | BigInt(buf[at + i] as number);
  return v;
}

/** A growable output buffer with big-endian writers and back-patching of lengths. */
export class Writer {
  private buf: Buffer;
  private pos = 0;

  constructor(initialBytes = 256) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  get length(): number {
    return this.pos;
  }

  /** Reserves n bytes and returns their offset. Callers must take the offset before touching
   *  this.buf, because reserving may replace the buffer. */
  private room(n: number): number {
    if (this.pos + n > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
      this.buf.copy(next, 0, 0, this.pos);
      this.buf = next;
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  u8(v: number): this {
    const at = this.room(1);
    this.buf[at] = v & 0xff;
    return this;
  }

  u16(v: number): this {
    const at = this.room(2);
    this.buf.writeUInt16BE(v & 0xffff, at);
    return this;
  }

  u32(v: number): this {
    const at = this.room(4);
    this.buf.writeUInt32BE(v >>> 0, at);
    return this;
  }

  u64(v: bigint): this {
    const at = this.room(8);
    this.buf.writeBigUInt64BE(BigInt.asUintN(64, v), at);
    return this;
  }

  /** The low n bytes of v, big-endian. */
  uint(v: bigint, n: number): this {
    const at = this.room(n);
    if (n <= 6 && n > 0) {
      this.buf.writeUIntBE(Number(BigInt.asUintN(n * 8, v)), at, n);
      return this;
    }
    if (n === 8) {
      this.buf.writeBigUInt64BE(BigInt.asUintN(64, v), at);
      return this;
    }
    if (n === 16) {
      this.buf.writeBigUInt64BE(BigInt.asUintN(64, v >> 64n), at);
      this.buf.writeBigUInt64BE(BigInt.asUintN(64, v), at + 8);
      return this;
    }
    let x = v;
    for (let i = n - 1; i >= 0; i--) {
      this.buf[at + i] = Number(x & 0xffn);
      x >>= 8n;
    }
    return this;
  }

  bytes(b: Uint8Array): this {
    const at = this.room(b.length);
    this.buf.set(b, at);
    return this;
  }

  zeros(n: number): this {
    const at = this.room(n);
    this.buf.fill(0, at, at + n);
    return this;
  }

  /** Zero bytes up to a multiple of 8 counted from 'from'. */
  padFrom(from: number): this {
    return this.zeros((8 - ((this.pos - from) % 8)) % 8);
  }

  patchU16(at: number, v: number): void {
    this.buf.writeUInt16BE(v & 0xffff, at);
  }

  patchU32(at: number, v: number): void {
    this.buf.writeUInt32BE(v >>> 0, at);
  }

  /** The bytes written so far, without copying: valid until the next write or reset. */
  view(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  /** Forgets what was written, keeping the buffer for reuse. */
  reset(): void {
    this.pos = 0;
  }

  /** A copy of the bytes written so far. */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** The mask of the low 'bits' bits. */
export function onesBits(bits: number): bigint {
  return (1n << BigInt(bits)) - 1n;
}
