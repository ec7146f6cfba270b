// The backup file of `ovnts snapshot save` / `inspect` / `restore`: one member's state-machine
// snapshot (the NB database and northd's history, as Raft snapshots carry it) at a
// linearizable revision, with a header saying what it is and a SHA-256 over all of it.
//
//   "OVNTSNAP" | header length (u32, big-endian) | header (JSON, UTF-8) | data | SHA-256
//
// The checksum covers the header bytes and the data, in that order, so neither can be swapped
// or cut without it showing. The file is written to FILE.partial and renamed when complete.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';

const MAGIC = Buffer.from('OVNTSNAP', 'ascii');
export const snapshotFileFormat = 1;
/** A header larger than this is not one of ours. */
const HEADER_BYTES_MAX = 64 * 1024;
const SHA256_BYTES = 32;

export interface SnapshotHeader {
  readonly format: number;
  readonly clusterId: string;
  /** The Raft log index the data is at: a restored cluster's revisions continue above it. */
  readonly revision: number;
  readonly nbSchema: { readonly name: string; readonly version: string };
  readonly sbSchema: { readonly name: string; readonly version: string };
  readonly createdAt: string;
  readonly dataBytes: number;
}

export class SnapshotFileError extends Error {}

/** Writes a snapshot file as its parts arrive: header first, then data, then the sender's checksum. */
export class SnapshotFileWriter {
  private readonly fd: number;
  private readonly hash = createHash('sha256');
  private written = 0;
  private header: SnapshotHeader | undefined;

  constructor(private readonly path: string) {
    this.fd = openSync(`${path}.partial`, 'w');
  }

  writeHeader(headerJson: string): SnapshotHeader {
    if (this.header !== undefined) throw new SnapshotFileError('a second header');
    const header = parseHeader(headerJson);
    const bytes = Buffer.from(headerJson, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    writeSync(this.fd, MAGIC);
    writeSync(this.fd, len);
    writeSync(this.fd, bytes);
    this.hash.update(bytes);
    this.header = header;
    return header;
  }

  writeData(chunk: Uint8Array): void {
    if (this.header === undefined) throw new SnapshotFileError('data before the header');
    this.written += chunk.byteLength;
    if (this.written > this.header.dataBytes) throw new SnapshotFileError(`more data than the header's ${this.header.dataBytes} bytes`);
    writeSync(this.fd, chunk);
    this.hash.update(chunk);
  }

  /** Checks the sender's checksum against what arrived, then completes the file. */
  finish(sha256: Uint8Array): void {
    if (this.header === undefined) throw new SnapshotFileError('no header');
    if (this.written !== this.header.dataBytes) throw new SnapshotFileError(`got ${this.written} of ${this.header.dataBytes} data bytes`);
    const mine = this.hash.digest();
    if (!mine.equals(Buffer.from(sha256))) throw new SnapshotFileError('checksum mismatch: the copy was damaged on the way');
    writeSync(this.fd, mine);
    closeSync(this.fd);
    renameSync(`${this.path}.partial`, this.path);
  }

  abort(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

function parseHeader(json: string): SnapshotHeader {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    throw new SnapshotFileError('the header is not JSON');
  }
  const h = v as Partial<SnapshotHeader>;
  if (h.format !== snapshotFileFormat) throw new SnapshotFileError(`unknown snapshot file format ${JSON.stringify(h.format)}`);
  if (typeof h.clusterId !== 'string' || !Number.isSafeInteger(h.revision) || !Number.isSafeInteger(h.dataBytes) || (h.dataBytes as number) < 0) {
    throw new SnapshotFileError('the header lacks clusterId, revision or dataBytes');
  }
  if (typeof h.nbSchema?.version !== 'string' || typeof h.sbSchema?.version !== 'string') throw new SnapshotFileError('the header lacks schema versions');
  return h as SnapshotHeader;
}

/** Reads and verifies a whole snapshot file. */
export function readSnapshotFile(path: string): { header: SnapshotHeader; data: Uint8Array; fileBytes: number } {
  const file = readFileSync(path);
  if (file.length < MAGIC.length + 4 + SHA256_BYTES || !file.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new SnapshotFileError(`${path} is not an ovnts snapshot file`);
  }
  const headerLen = file.readUInt32BE(MAGIC.length);
  const headerStart = MAGIC.length + 4;
  if (headerLen > HEADER_BYTES_MAX || headerStart + headerLen + SHA256_BYTES > file.length) throw new SnapshotFileError(`${path}: bad header length ${headerLen}`);
  const headerBytes = file.subarray(headerStart, headerStart + headerLen);
  const header = parseHeader(headerBytes.toString('utf8'));
  const dataStart = headerStart + headerLen;
  const dataEnd = file.length - SHA256_BYTES;
  if (dataEnd - dataStart !== header.dataBytes) {
    throw new SnapshotFileError(`${path}: ${dataEnd - dataStart} data bytes where the header says ${header.dataBytes} (truncated?)`);
  }
  const data = file.subarray(dataStart, dataEnd);
  const sha = createHash('sha256').update(headerBytes).update(data).digest();
  if (!sha.equals(file.subarray(dataEnd))) throw new SnapshotFileError(`${path}: checksum mismatch (damaged file)`);
  return { header, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), fileBytes: file.length };
}
