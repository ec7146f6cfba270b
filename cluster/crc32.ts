// CRC-32 (IEEE 802.3, the zlib and PNG polynomial). The storage checksums every record with it,
// snapshots included (megabytes each). Node has a native zlib.crc32 from 20.15, an order of
// magnitude faster than a loop in JS; our engines field allows any Node 20, so older ones get
// the table-driven fallback below. The tests compare the two where zlib has it.
import zlib from 'node:zlib';

const table: Uint32Array = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** The table-driven CRC-32, one byte per step: the reference, and the fallback. */
export function crc32Table(bytes: Uint8Array, crc = 0): number {
  let c = (crc ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) {
    c = (table[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}

const native = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/**
 * The CRC-32 of `bytes`, continuing from `crc` (the value returned for the bytes before them;
 * 0 to start), as an unsigned 32-bit integer. crc32(b, crc32(a)) === crc32(a ++ b).
 */
export const crc32: (bytes: Uint8Array, crc?: number) => number =
  native === undefined ? crc32Table : (bytes, crc = 0) => native(bytes, crc) >>> 0;
