// Durable storage for one Raft node, on LevelDB: the shell's disk.
//
// It holds what types.ts calls PersistedState: the hard state, the latest snapshot (metadata
// and data) and the log entries after it. The shell uses it exactly as the simulator uses
// tests/cluster/memory-disk.ts, awaiting each call:
//
//   const storage = await RaftStorage.open(dir);  // storage.warnings: what recovery dropped
//   const node = new RawNode(config, storage.load());
//   await storage.save(rd);                        // MemoryDisk.persist(rd); then send acks
//   await storage.saveSnapshot(s.meta, s.data);    // MemoryDisk.compact(s) is these two:
//   await storage.compact(s.meta.index + 1);       //   snapshot first, then drop the log
//
// Snapshot and compaction are two writes so that a crash between them is harmless: the
// snapshot is durable first, and entries at or below it are ignored on open until compact()
// deletes them.
//
// Layout. Every key starts with a tag byte. Entries are stored in records of consecutive
// entries, one record per save (split at recordBytesMax): one LevelDB put per Ready instead of
// one per entry, which is most of the CPU a busy leader spends on its disk. A record's key adds
// the index of its first entry as 8 bytes big-endian, so LevelDB's byte order is log order.
// Truncating a conflicting tail rewrites the one record it cuts through; compaction deletes
// the records wholly below the snapshot, so a record may straddle it. Every value
// is a record: a CRC-32 (4 bytes, big-endian) over key ++ payload, then the payload (msgpack,
// or raw bytes for snapshot chunks). Covering the key too catches a record found under the
// wrong key.
//
// Why checksums, when LevelDB batches are atomic? A process killed mid-batch loses the whole
// batch: LevelDB drops a partially written record at the end of its write-ahead log when it
// recovers. But a machine that crashes between a write and its fsync may persist the
// unsynced pages of that log in any order, and disks rot. So recovery checks every record
// and that entries are contiguous from snapshot index + 1, as defence in depth:
//   - damage confined to the tail of the log (the last record, or a run of last records
//     that all fail their checksum) is what a torn, unsynced write looks like: their entries
//     are dropped, deleted, and reported in `warnings`. They lie above the durable commit
//     index (damage at or below it is an error, below), so no committed entry is lost; one
//     this node had acknowledged may be, which is why the drop is reported, never silent.
//   - damage followed by good records, a gap in the middle of the log, a bad hard state or
//     snapshot, a record whose checksum passes but whose content does not decode, or a
//     committed entry missing: open throws StorageCorruptError. Never silent loss.
//
// Errors: any LevelDB failure is thrown as StorageError (kind 'io'); the node must stop on it
// (stop voting, stop acknowledging) rather than limp on. After a failed write this object
// refuses further writes. Shell bugs (two writes at once, an append leaving a gap, a term
// that goes back) are assertion failures.

import assert from 'node:assert';
import { Level } from 'level';
import { Packr } from 'msgpackr';
import { crc32 } from './crc32.js';
import { EntryType } from './types.js';
import type { ConfState, Entry, HardState, NodeId, PersistedState, Ready, Snapshot, SnapshotMeta } from './types.js';

/** Snapshot data is stored in pieces of at most this many bytes, each its own record. */
export const snapshotChunkBytesMax = 1024 * 1024;

/**
 * LevelDB's own memory. The log is written once, read back only on open, and deleted at
 * compaction, so its block cache (LevelDB's default 8 MiB) serves nearly nothing and stays
 * small; the write buffer (default 4 MiB, held in memory until flushed to a table file) bounds
 * how much of the recent log LevelDB keeps in memory beside the core's own copy.
 */
export const levelDefaults = { cacheBytes: 1024 * 1024, writeBufferBytes: 1024 * 1024 } as const;

export interface StorageOptions {
  /** Defaults to snapshotChunkBytesMax; tests lower it to exercise chunking cheaply. */
  readonly snapshotChunkBytesMax?: number;
  /** LevelDB's block cache (cacheSize); defaults to levelDefaults.cacheBytes. */
  readonly levelCacheBytes?: number;
  /** LevelDB's write buffer (writeBufferSize); defaults to levelDefaults.writeBufferBytes. */
  readonly levelWriteBufferBytes?: number;
}

/**
 * The durable part of one Ready, written as one batch: synced unless `mustSync` is false. A
 * Ready that only moves the commit index promises nothing that needs the disk, so it is not
 * written at once: the commit index rides with the next batch (or close), and one lost in a
 * crash is learned again from the leader.
 */
export type ReadyWrites = Pick<Ready, 'snapshot' | 'entries' | 'hardState'> & { readonly mustSync?: boolean };

export type StorageErrorKind = 'io' | 'corrupt';

/** LevelDB failed. The node must stop: it can no longer keep the promises its messages make. */
export class StorageError extends Error {
  readonly kind: StorageErrorKind = 'io';
  override name = 'StorageError';
}

/** The stored state is damaged in a way recovery cannot repair without losing data. */
export class StorageCorruptError extends StorageError {
  override readonly kind = 'corrupt';
  override name = 'StorageCorruptError';

  constructor(
    /** The damaged record, described for a person ("entry 17", "snapshot chunk 2"). */
    readonly key: string,
    message: string,
    /** The log index concerned, when the damage is in the log. */
    readonly index?: number,
  ) {
    super(`storage corrupt at ${key}: ${message}`);
  }
}

/** Something recovery dropped on open: the shell should log it. */
export interface StorageWarning {
  readonly kind: 'torn-tail';
  readonly index: number;
  readonly message: string;
}

// ---------------------------------------------------------------------------------------
// Keys and records

const tag = { hardState: 0x01, snapshotMeta: 0x02, snapshotChunk: 0x03, entry: 0x04 } as const;

const hardStateKey = Uint8Array.of(tag.hardState);
const snapshotMetaKey = Uint8Array.of(tag.snapshotMeta);
/** 2^32: the entry index is split into two 32-bit halves for the key. */
const u32Range = 0x1_0000_0000;
/** A save's entries are split into records of about this many bytes (at least one entry each). */
export const recordBytesMax = 1024 * 1024;

/** The most value bytes written as a chained batch; a larger write goes in the array form (see write). */
export const chainedBatchBytesMax = 64 * 1024;
/** What one entry costs in a record beside its data (its other fields, msgpack framing). */
const RECORD_ENTRY_OVERHEAD_BYTES = 48;

function entryKey(index: number): Uint8Array {
  assert(Number.isSafeInteger(index) && index > 0, `entry index must be a positive integer, got ${index}`);
  const key = new Uint8Array(9);
  const view = new DataView(key.buffer);
  key[0] = tag.entry;
  view.setUint32(1, Math.floor(index / u32Range));
  view.setUint32(5, index % u32Range);
  return key;
}

function chunkKey(n: number): Uint8Array {
  const key = new Uint8Array(5);
  key[0] = tag.snapshotChunk;
  new DataView(key.buffer).setUint32(1, n);
  return key;
}

/** The index in an entry key, or undefined if the key is malformed. */
function entryKeyIndex(key: Uint8Array): number | undefined {
  if (key.length !== 9 || key[0] !== tag.entry) return undefined;
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const index = view.getUint32(1) * u32Range + view.getUint32(5);
  return Number.isSafeInteger(index) ? index : undefined;
}

function chunkKeyNumber(key: Uint8Array): number | undefined {
  if (key.length !== 5 || key[0] !== tag.snapshotChunk) return undefined;
  return new DataView(key.buffer, key.byteOffset, key.byteLength).getUint32(1);
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** A key as a person reads it in an error message. */
function describeKey(key: Uint8Array): string {
  if (key.length === 1 && key[0] === tag.hardState) return 'hard state';
  if (key.length === 1 && key[0] === tag.snapshotMeta) return 'snapshot meta';
  const index = entryKeyIndex(key);
  if (index !== undefined) return `entry record from ${index} (key ${hex(key)})`;
  const n = chunkKeyNumber(key);
  if (n !== undefined) return `snapshot chunk ${n} (key ${hex(key)})`;
  return `key ${hex(key)}`;
}

const checksumBytes = 4;

/** The stored form of `payload` under `key`: its checksum, then the payload. */
function sealRecord(key: Uint8Array, payload: Uint8Array): Uint8Array {
  const value = new Uint8Array(checksumBytes + payload.byteLength);
  new DataView(value.buffer).setUint32(0, crc32(payload, crc32(key)));
  value.set(payload, checksumBytes);
  return value;
}

/** The payload of a stored record, or undefined if its checksum fails. */
function openRecord(key: Uint8Array, value: Uint8Array): Uint8Array | undefined {
  if (value.byteLength < checksumBytes) return undefined;
  const stored = new DataView(value.buffer, value.byteOffset, value.byteLength).getUint32(0);
  const payload = value.subarray(checksumBytes);
  return crc32(payload, crc32(key)) === stored ? payload : undefined;
}

// ---------------------------------------------------------------------------------------
// Payloads: msgpack arrays, decoded defensively (a checksum that passes over content that
// does not decode means a bug or a format change, and is reported as corruption).

const packr = new Packr({ useRecords: false });

const entryTypes: ReadonlySet<unknown> = new Set<unknown>(Object.values(EntryType));

function isIndex(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

function isIndexList(x: unknown): x is number[] {
  return Array.isArray(x) && x.every(isIndex);
}

/** A plain Uint8Array view (msgpackr hands out Buffers). */
function plainBytes(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function entryTuple(e: Entry): unknown[] {
  return [e.index, e.term, e.type, e.data, e.client?.clientId ?? null, e.client?.seq ?? null];
}

/** A record: the entries' tuples in one msgpack array. */
function encodeRecord(es: readonly Entry[]): Uint8Array {
  return packr.pack(es.map(entryTuple));
}

/**
 * The entries of a record stored under first index `first`, or undefined if they do not decode
 * or are not consecutive from `first`. A payload that is a single entry tuple is the layout
 * before records (one entry per key) and reads the same way.
 */
function decodeRecord(payload: Uint8Array, first: number): Entry[] | undefined {
  const v: unknown = packr.unpack(payload);
  if (!Array.isArray(v) || v.length === 0) return undefined;
  const tuples: unknown[] = Array.isArray(v[0]) ? v : [v];
  const out: Entry[] = [];
  for (const t of tuples) {
    const e = decodeEntryTuple(t);
    if (e === undefined || e.index !== first + out.length) return undefined;
    out.push(e);
  }
  return out;
}

function decodeEntryTuple(v: unknown): Entry | undefined {
  if (!Array.isArray(v) || v.length !== 6) return undefined;
  const [index, term, type, data, clientId, seq] = v as unknown[];
  if (!isIndex(index) || !isIndex(term) || !entryTypes.has(type) || !(data instanceof Uint8Array)) return undefined;
  const base = { index, term, type: type as EntryType, data: plainBytes(data) };
  if (clientId === null && seq === null) return base;
  if (typeof clientId !== 'string' || !isIndex(seq)) return undefined;
  return { ...base, client: { clientId, seq } };
}

function encodeHardState(hs: HardState): Uint8Array {
  return packr.pack([hs.term, hs.vote, hs.commit]);
}

function decodeHardState(payload: Uint8Array): HardState | undefined {
  const v: unknown = packr.unpack(payload);
  if (!Array.isArray(v) || v.length !== 3 || !isIndexList(v)) return undefined;
  const [term, vote, commit] = v as [number, NodeId, number];
  return { term, vote, commit };
}

/** Snapshot metadata plus what is needed to reassemble and verify the data. */
interface StoredSnapshotMeta {
  readonly meta: SnapshotMeta;
  readonly totalBytes: number;
  readonly chunkCount: number;
  /** CRC-32 of the whole data: catches chunks reassembled wrongly. */
  readonly dataCrc: number;
}

function encodeSnapshotMeta(s: StoredSnapshotMeta): Uint8Array {
  const { index, term, conf } = s.meta;
  return packr.pack([
    index,
    term,
    conf.voters,
    conf.learners,
    conf.removed,
    conf.electionTicks ?? null,
    s.totalBytes,
    s.chunkCount,
    s.dataCrc,
  ]);
}

function decodeSnapshotMeta(payload: Uint8Array): StoredSnapshotMeta | undefined {
  const v: unknown = packr.unpack(payload);
  if (!Array.isArray(v) || v.length !== 9) return undefined;
  const [index, term, voters, learners, removed, electionTicks, totalBytes, chunkCount, dataCrc] = v as unknown[];
  if (!isIndex(index) || !isIndex(term) || !isIndexList(voters) || !isIndexList(learners)) return undefined;
  if (!isIndexList(removed) || !isIndex(totalBytes) || !isIndex(chunkCount) || !isIndex(dataCrc)) return undefined;
  if (electionTicks !== null && !isIndex(electionTicks)) return undefined;
  const conf: ConfState =
    electionTicks === null ? { voters, learners, removed } : { voters, learners, removed, electionTicks };
  return { meta: { index, term, conf }, totalBytes, chunkCount, dataCrc };
}

/** Reads one singleton record (hard state, snapshot meta); undefined if absent. */
function openSingleton<T>(key: Uint8Array, value: Uint8Array | undefined, decode: (p: Uint8Array) => T | undefined): T | undefined {
  if (value === undefined) return undefined;
  const payload = openRecord(key, value);
  if (payload === undefined) throw new StorageCorruptError(describeKey(key), 'checksum mismatch');
  const decoded = decode(payload);
  if (decoded === undefined) throw new StorageCorruptError(describeKey(key), 'checksum passes but the record does not decode');
  return decoded;
}

// ---------------------------------------------------------------------------------------
// Recovery: a pure function from the raw records to the state, so it can be reasoned about
// apart from LevelDB.

type RawRecord = readonly [key: Uint8Array, value: Uint8Array];

/** Where one stored record's entries lie: [first, last]. */
interface StoredRecord {
  readonly first: number;
  readonly last: number;
}

interface Recovered {
  readonly state: PersistedState;
  readonly chunkCount: number;
  /** The records kept, in log order. */
  readonly records: StoredRecord[];
  /** The lowest entry index stored; entries at or below the snapshot await compact(). */
  readonly storedFirst: number;
  readonly storedLast: number;
  readonly warnings: readonly StorageWarning[];
  /** Torn-tail records to delete. */
  readonly dropKeys: readonly Uint8Array[];
}

function recover(
  hardStateValue: Uint8Array | undefined,
  metaValue: Uint8Array | undefined,
  chunks: readonly RawRecord[],
  entries: readonly RawRecord[],
): Recovered {
  let hardState = openSingleton(hardStateKey, hardStateValue, decodeHardState) ?? { term: 0, vote: 0, commit: 0 };
  const stored = openSingleton(snapshotMetaKey, metaValue, decodeSnapshotMeta);
  const snapshot = stored === undefined ? undefined : reassembleSnapshot(stored, chunks);
  if (stored === undefined && chunks.length > 0) {
    throw new StorageCorruptError(describeKey((chunks[0] as RawRecord)[0]), 'snapshot chunks without snapshot meta');
  }
  const snapIndex = snapshot?.meta.index ?? 0;
  // A snapshot holds only committed state, so its index is committed even when the commit
  // index written last is older (save() defers commit-only writes).
  if (hardState.commit < snapIndex) hardState = { ...hardState, commit: snapIndex };

  // Entries at or below the snapshot are covered by it; they stay until compact() deletes
  // their records and are not read. A record may straddle the snapshot index.
  const records: StoredRecord[] = [];
  let staleLast = 0;
  const live: { key: Uint8Array; first: number; entries: Entry[] | undefined }[] = [];
  for (const [key, value] of entries) {
    const first = entryKeyIndex(key);
    if (first === undefined) throw new StorageCorruptError(describeKey(key), 'malformed entry key');
    const payload = openRecord(key, value);
    if (payload === undefined) {
      // A damaged record wholly covered by the snapshot would be ignored anyway; one that
      // may reach past it counts as live damage (its extent is unknown).
      if (first <= snapIndex) {
        records.push({ first, last: first });
        staleLast = Math.max(staleLast, first);
      } else {
        live.push({ key, first, entries: undefined });
        records.push({ first, last: first });
      }
      continue;
    }
    const es = decodeRecord(payload, first);
    if (es === undefined) {
      throw new StorageCorruptError(describeKey(key), 'checksum passes but the record does not decode to entries from its index', first);
    }
    const last = first + es.length - 1;
    if (last <= snapIndex) {
      records.push({ first, last });
      staleLast = Math.max(staleLast, last);
      continue;
    }
    live.push({ key, first: Math.max(first, snapIndex + 1), entries: first > snapIndex ? es : es.slice(snapIndex + 1 - first) });
    records.push({ first, last });
  }

  // The good prefix: contiguous from snapIndex + 1 with valid checksums.
  let good = 0;
  let expected = snapIndex + 1;
  const kept: Entry[] = [];
  while (good < live.length) {
    const r = live[good] as (typeof live)[number];
    if (r.entries === undefined || r.first !== expected) break;
    for (const e of r.entries) kept.push(e);
    good++;
    expected += r.entries.length;
  }
  const warnings: StorageWarning[] = [];
  const dropKeys: Uint8Array[] = [];
  const rest = live.slice(good);
  const firstBad = rest[0];
  if (firstBad !== undefined) {
    const problem =
      firstBad.entries === undefined
        ? `checksum mismatch at index ${firstBad.first}`
        : `gap: index ${expected} missing before ${firstBad.first}`;
    const torn = rest.length === 1 || rest.every((r) => r.entries === undefined);
    if (!torn) {
      const after = rest.slice(1).reduce((n, r) => n + (r.entries?.length ?? 0), 0);
      throw new StorageCorruptError(
        describeKey(firstBad.key),
        `${problem}, followed by ${after} good entries: not a torn tail`,
        firstBad.entries === undefined ? firstBad.first : expected,
      );
    }
    if (hardState.commit >= expected) {
      throw new StorageCorruptError(
        describeKey(firstBad.key),
        `${problem} in the tail, but entries up to ${hardState.commit} were durably committed`,
        firstBad.entries === undefined ? firstBad.first : expected,
      );
    }
    for (const r of rest) {
      const why = r.entries === undefined ? 'checksum mismatch' : `not contiguous (expected ${expected})`;
      warnings.push({ kind: 'torn-tail', index: r.first, message: `dropped torn tail entry record from ${r.first}: ${why}` });
      dropKeys.push(r.key);
    }
    // The dropped records are the last ones stored.
    records.length -= rest.length;
  }
  const lastIndex = snapIndex + kept.length;
  if (hardState.commit > lastIndex) {
    throw new StorageCorruptError('hard state', `commit ${hardState.commit} beyond the last stored entry ${lastIndex}`);
  }
  const state: PersistedState =
    snapshot === undefined ? { hardState, entries: kept } : { hardState, snapshot, entries: kept };
  const storedFirst = records[0]?.first ?? snapIndex + 1;
  return {
    state,
    chunkCount: stored?.chunkCount ?? 0,
    records,
    storedFirst,
    storedLast: kept.length > 0 ? lastIndex : Math.max(staleLast, storedFirst - 1),
    warnings,
    dropKeys,
  };
}

/** A save's entries cut into records of about recordBytesMax, each at least one entry. */
function recordGroups(es: readonly Entry[]): Entry[][] {
  const groups: Entry[][] = [];
  let group: Entry[] = [];
  let bytes = 0;
  for (const e of es) {
    const cost = e.data.byteLength + RECORD_ENTRY_OVERHEAD_BYTES;
    if (group.length > 0 && bytes + cost > recordBytesMax) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(e);
    bytes += cost;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

function reassembleSnapshot(stored: StoredSnapshotMeta, chunks: readonly RawRecord[]): Snapshot {
  const data = new Uint8Array(stored.totalBytes);
  let offset = 0;
  chunks.forEach(([key, value], i) => {
    const n = chunkKeyNumber(key);
    if (n !== i) throw new StorageCorruptError(describeKey(key), `expected snapshot chunk ${i}`);
    if (n >= stored.chunkCount) throw new StorageCorruptError(describeKey(key), `snapshot has only ${stored.chunkCount} chunks`);
    const payload = openRecord(key, value);
    if (payload === undefined) throw new StorageCorruptError(describeKey(key), 'checksum mismatch');
    if (offset + payload.byteLength > data.byteLength) {
      throw new StorageCorruptError(describeKey(key), `snapshot data exceeds ${stored.totalBytes} bytes`);
    }
    data.set(payload, offset);
    offset += payload.byteLength;
  });
  if (chunks.length !== stored.chunkCount) {
    throw new StorageCorruptError(describeKey(chunkKey(chunks.length)), `missing: snapshot has ${stored.chunkCount} chunks`);
  }
  if (offset !== stored.totalBytes || crc32(data) !== stored.dataCrc) {
    throw new StorageCorruptError('snapshot meta', `reassembled data (${offset} bytes) does not match its checksum`);
  }
  return { meta: stored.meta, data };
}

// ---------------------------------------------------------------------------------------
// The storage

type BatchOp = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs one LevelDB call; its failure becomes a StorageError (kind 'io'). */
async function io<T>(what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw new StorageError(`${what}: ${errorMessage(err)}`, { cause: err });
  }
}

function range(lo: number, hi: number): { gte: Uint8Array; lt: Uint8Array } {
  return { gte: Uint8Array.of(lo), lt: Uint8Array.of(hi) };
}

export class RaftStorage {
  /** What recovery dropped on open (a torn tail). Empty after a clean shutdown. */
  readonly warnings: readonly StorageWarning[];
  private hardState: HardState;
  /** hardState holds a commit index not yet written (see save): written with the next write. */
  private hardStateUnwritten = false;
  private snapMeta: SnapshotMeta | undefined;
  private chunkCount: number;
  /**
   * Every stored entry lies in [storedFirst, storedLast] (none when storedLast < storedFirst),
   * and storedFirst <= snapshot index + 1: entries at or below the snapshot await compact().
   * The range may also cover absent keys (deleting those is a no-op); beyond the snapshot it
   * is exact.
   */
  private storedFirst: number;
  private storedLast: number;
  /** The stored records, in log order (see Layout). */
  private readonly records: StoredRecord[];
  /** The state found on open, until the first write: the core owns the live log after that. */
  private initial: PersistedState | undefined;
  private writing = false;
  private failed: StorageError | undefined;
  private closed = false;

  private constructor(
    private readonly db: Level<Uint8Array, Uint8Array>,
    readonly dir: string,
    private readonly chunkBytesMax: number,
    recovered: Recovered,
  ) {
    const s = recovered.state;
    this.hardState = s.hardState;
    this.snapMeta = s.snapshot?.meta;
    this.chunkCount = recovered.chunkCount;
    this.storedFirst = recovered.storedFirst;
    this.storedLast = recovered.storedLast;
    this.records = recovered.records;
    this.initial = s;
    this.warnings = recovered.warnings;
    this.checkInvariants();
  }

  /**
   * Opens (creating if needed) the store in `dir` and recovers its state. Throws
   * StorageCorruptError if the state cannot be recovered without losing data, StorageError
   * if LevelDB fails. A torn tail is deleted and reported in `warnings`.
   */
  static async open(dir: string, options: StorageOptions = {}): Promise<RaftStorage> {
    const chunkBytesMax = options.snapshotChunkBytesMax ?? snapshotChunkBytesMax;
    assert(Number.isSafeInteger(chunkBytesMax) && chunkBytesMax > 0, `bad snapshotChunkBytesMax ${chunkBytesMax}`);
    const db = new Level<Uint8Array, Uint8Array>(dir, {
      keyEncoding: 'view',
      valueEncoding: 'view',
      cacheSize: options.levelCacheBytes ?? levelDefaults.cacheBytes,
      writeBufferSize: options.levelWriteBufferBytes ?? levelDefaults.writeBufferBytes,
    });
    await io(`open ${dir}`, () => db.open());
    try {
      const hs = await io('read hard state', () => db.get(hardStateKey));
      const meta = await io('read snapshot meta', () => db.get(snapshotMetaKey));
      const chunks = await io('read snapshot chunks', () => db.iterator(range(tag.snapshotChunk, tag.snapshotChunk + 1)).all());
      const entries = await io('read entries', () => db.iterator(range(tag.entry, tag.entry + 1)).all());
      const recovered = recover(hs, meta, chunks, entries);
      if (recovered.dropKeys.length > 0) {
        const ops: BatchOp[] = recovered.dropKeys.map((key) => ({ type: 'del', key }));
        await io('delete torn tail', () => db.batch(ops, { sync: true }));
      }
      return new RaftStorage(db, dir, chunkBytesMax, recovered);
    } catch (err) {
      // Release the LevelDB lock so that the directory can be inspected; the error that
      // stopped recovery is the one to report, with a failure to close added to it.
      try {
        await db.close();
      } catch (closeErr) {
        throw new StorageError(`${errorMessage(err)}; closing ${dir} also failed: ${errorMessage(closeErr)}`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    assert(!this.writing, 'close while a write is in flight');
    if (this.closed) return;
    if (this.hardStateUnwritten && this.failed === undefined) {
      const hs = this.hardState;
      await this.write([{ type: 'put', key: hardStateKey, value: sealRecord(hardStateKey, encodeHardState(hs)) }], false, 'close');
      this.hardStateUnwritten = false;
    }
    this.closed = true;
    await io(`close ${this.dir}`, () => this.db.close());
  }

  /**
   * The state found on open, for the core to restart from. Valid only before the first
   * write: after that the core, not the storage, holds the live log.
   */
  load(): PersistedState {
    assert(this.initial !== undefined, 'load() after a write: the core holds the live state');
    return this.initial;
  }

  firstIndex(): number {
    return this.snapIndex() + 1;
  }

  lastIndex(): number {
    return Math.max(this.snapIndex(), this.storedLast);
  }

  /**
   * Persists one Ready's durable part in one batch, synced when `mustSync` (see ReadyWrites):
   * if `snapshot` is set it replaces
   * the whole stored log; then `entries` are appended, first deleting any stored entry at or
   * after entries[0].index (a conflicting tail); then `hardState` is written. Resolves only
   * once the write is on disk: only then may the messages that promise it be sent.
   */
  async save(rd: ReadyWrites): Promise<void> {
    this.checkWritable('save');
    if (rd.snapshot === undefined && rd.entries.length === 0 && rd.hardState === undefined) return;
    const hs = rd.hardState;
    if (hs !== undefined) this.checkHardState(hs);
    if (rd.snapshot === undefined && rd.entries.length === 0 && hs !== undefined && rd.mustSync === false &&
        hs.term === this.hardState.term && hs.vote === this.hardState.vote) {
      // Only the commit index moved. It is a hint (a restarted node learns it again from the
      // leader), so it costs no write of its own: it rides with the next write, or close().
      // On the serial commit path this saves a LevelDB round trip on every node.
      this.hardState = hs;
      this.hardStateUnwritten = true;
      return;
    }
    const ops: BatchOp[] = [];
    let snapMeta = this.snapMeta;
    let chunkCount = this.chunkCount;
    let storedFirst = this.storedFirst;
    let storedLast = this.storedLast;
    // The records kept are records[0, keep); `trimmed` replaces the last kept one; `added` follow.
    let keep = this.records.length;
    let trimmed: StoredRecord | undefined;
    const added: StoredRecord[] = [];
    if (rd.snapshot !== undefined) {
      for (const r of this.records) ops.push({ type: 'del', key: entryKey(r.first) });
      keep = 0;
      chunkCount = this.snapshotOps(rd.snapshot.meta, rd.snapshot.data, ops);
      snapMeta = rd.snapshot.meta;
      storedFirst = snapMeta.index + 1;
      storedLast = snapMeta.index;
    }
    const snapIndex = snapMeta?.index ?? 0;
    const lastIndex = Math.max(snapIndex, storedLast);
    const first = rd.entries[0];
    if (first !== undefined) {
      assert(first.index >= snapIndex + 1, `storage: append at ${first.index} below first index ${snapIndex + 1}`);
      assert(first.index <= lastIndex + 1, `storage: append at ${first.index} leaves a gap after ${lastIndex}`);
      // A conflicting tail: records from first.index on go, and the one it cuts is rewritten.
      while (keep > 0 && (this.records[keep - 1] as StoredRecord).first >= first.index) {
        ops.push({ type: 'del', key: entryKey((this.records[keep - 1] as StoredRecord).first) });
        keep--;
      }
      const cut = this.records[keep - 1];
      if (cut !== undefined && cut.last >= first.index) {
        const prefix = (await this.readRecord(cut.first)).slice(0, first.index - cut.first);
        const key = entryKey(cut.first);
        ops.push({ type: 'put', key, value: sealRecord(key, encodeRecord(prefix)) });
        trimmed = { first: cut.first, last: first.index - 1 };
      }
      rd.entries.forEach((e, i) => assert(e.index === first.index + i, `storage: entries not contiguous at ${e.index}`));
      for (const group of recordGroups(rd.entries)) {
        const head = group[0] as Entry;
        const key = entryKey(head.index);
        ops.push({ type: 'put', key, value: sealRecord(key, encodeRecord(group)) });
        added.push({ first: head.index, last: head.index + group.length - 1 });
      }
      storedLast = first.index + rd.entries.length - 1;
      if (storedFirst > storedLast) storedFirst = first.index;
    }
    const writeHs = hs ?? (this.hardStateUnwritten ? this.hardState : undefined);
    if (writeHs !== undefined) {
      ops.push({ type: 'put', key: hardStateKey, value: sealRecord(hardStateKey, encodeHardState(writeHs)) });
    }
    const commit = (hs ?? this.hardState).commit;
    assert(commit <= Math.max(snapIndex, storedLast), `storage: commit ${commit} beyond the durable log`);
    await this.write(ops, rd.mustSync !== false, 'save');
    if (writeHs !== undefined) this.hardStateUnwritten = false;
    this.records.length = keep;
    if (trimmed !== undefined) this.records[keep - 1] = trimmed;
    for (const r of added) this.records.push(r);
    this.snapMeta = snapMeta;
    this.chunkCount = chunkCount;
    this.storedFirst = storedFirst;
    this.storedLast = storedLast;
    if (hs !== undefined) this.hardState = hs;
    this.checkInvariants();
  }

  /**
   * Stores a snapshot the node took of its own state machine (RawNode.compact), synced.
   * The log is untouched: call compact() afterwards to drop the entries it covers. A
   * snapshot not newer than the stored one is ignored.
   */
  async saveSnapshot(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
    this.checkWritable('save snapshot');
    if (meta.index <= this.snapIndex()) return;
    assert(meta.index <= this.lastIndex(), `storage: snapshot at ${meta.index} beyond the log (${this.lastIndex()})`);
    const ops: BatchOp[] = [];
    const chunkCount = this.snapshotOps(meta, data, ops);
    await this.write(ops, true, 'save snapshot');
    this.snapMeta = meta;
    this.chunkCount = chunkCount;
    this.checkInvariants();
  }

  /**
   * Deletes the stored entries below `index`, which must be covered by the snapshot
   * (index <= snapshot index + 1). Not synced: losing it in a crash only leaves entries that
   * open ignores, and LevelDB's log keeps it ordered before any later synced write.
   */
  async compact(index: number): Promise<void> {
    this.checkWritable('compact');
    assert(index <= this.snapIndex() + 1, `storage: compact(${index}) beyond the snapshot at ${this.snapIndex()}`);
    if (index <= this.storedFirst) return;
    // Records wholly below index go; one that straddles it stays (open ignores its head).
    let n = 0;
    while (n < this.records.length && (this.records[n] as StoredRecord).last < index) n++;
    const ops: BatchOp[] = this.records.slice(0, n).map((r) => ({ type: 'del', key: entryKey(r.first) }));
    await this.write(ops, false, 'compact');
    this.records.splice(0, n);
    this.storedFirst = this.records[0]?.first ?? index;
    if (this.storedLast < index) this.storedLast = index - 1;
    this.checkInvariants();
  }

  /** The entries of the stored record starting at `first` (to rewrite it when a tail is cut). */
  private async readRecord(first: number): Promise<Entry[]> {
    const key = entryKey(first);
    const value = await io(`read ${describeKey(key)}`, () => this.db.get(key));
    const payload = value === undefined ? undefined : openRecord(key, value);
    const es = payload === undefined ? undefined : decodeRecord(payload, first);
    if (es === undefined) throw new StorageCorruptError(describeKey(key), 'unreadable while cutting a conflicting tail', first);
    return es;
  }

  private checkHardState(hs: HardState): void {
    const prev = this.hardState;
    assert(hs.term >= prev.term, `storage: term regresses ${prev.term} -> ${hs.term}`);
    assert(hs.commit >= prev.commit, `storage: commit regresses ${prev.commit} -> ${hs.commit}`);
    assert(hs.term > prev.term || prev.vote === 0 || hs.vote === prev.vote, `storage: vote changes within term ${hs.term}`);
  }

  private snapIndex(): number {
    return this.snapMeta?.index ?? 0;
  }

  /** Appends the ops that store a snapshot: its chunks, then its metadata. Returns the chunk count. */
  private snapshotOps(meta: SnapshotMeta, data: Uint8Array, ops: BatchOp[]): number {
    const size = this.chunkBytesMax;
    const chunkCount = Math.ceil(data.byteLength / size);
    for (let n = 0; n < chunkCount; n++) {
      const key = chunkKey(n);
      const chunk = data.subarray(n * size, (n + 1) * size);
      ops.push({ type: 'put', key, value: sealRecord(key, chunk) });
    }
    for (let n = chunkCount; n < this.chunkCount; n++) ops.push({ type: 'del', key: chunkKey(n) });
    // Last in the batch: the metadata is what makes the chunks a snapshot. The batch is
    // atomic anyway; the order keeps a reader of the batch honest.
    const stored: StoredSnapshotMeta = { meta, totalBytes: data.byteLength, chunkCount, dataCrc: crc32(data) };
    ops.push({ type: 'put', key: snapshotMetaKey, value: sealRecord(snapshotMetaKey, encodeSnapshotMeta(stored)) });
    return chunkCount;
  }

  /** Called first by every write, before it looks at the state an in-flight write may change. */
  private checkWritable(what: string): void {
    assert(!this.closed, `storage: ${what} after close`);
    assert(!this.writing, `storage: ${what} while another write is in flight (one Ready at a time)`);
    if (this.failed !== undefined) {
      throw new StorageError(`${what} refused: an earlier write failed (${this.failed.message})`, { cause: this.failed });
    }
  }

  private async write(ops: BatchOp[], sync: boolean, what: string): Promise<void> {
    this.checkWritable(what);
    this.initial = undefined;
    if (ops.length === 0) return;
    this.writing = true;
    try {
      // A small batch is chained: classic-level's array form costs about twice the main
      // thread's time per call (74-83 against 42 µs measured for a two-put synced batch). But
      // a chained batch's native copy of its values is freed only when V8 collects the batch,
      // so each large one is copied into memory the process has not touched yet: a batch of
      // 400 KB took 120-190 page faults and 4.4-4.6 ms, against 9-16 faults and 1.9-2.1 ms in
      // the array form, which frees its copy once written.
      let bytes = 0;
      for (const op of ops) if (op.type === 'put') bytes += op.value.byteLength;
      if (bytes > chainedBatchBytesMax) {
        await this.db.batch(ops, { sync });
        return;
      }
      const batch = this.db.batch();
      for (const op of ops) {
        if (op.type === 'put') batch.put(op.key, op.value);
        else batch.del(op.key);
      }
      await batch.write({ sync });
    } catch (err) {
      this.failed = new StorageError(`${what}: ${errorMessage(err)}`, { cause: err });
      throw this.failed;
    } finally {
      this.writing = false;
    }
  }

  private checkInvariants(): void {
    const snapIndex = this.snapIndex();
    assert(this.storedFirst <= snapIndex + 1, `storage: first stored ${this.storedFirst} beyond snapshot ${snapIndex} + 1`);
    assert(this.storedLast >= this.storedFirst - 1, 'storage: stored range inverted');
    assert(this.hardState.commit <= this.lastIndex(), 'storage: commit beyond the durable log');
  }
}
