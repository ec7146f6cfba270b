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
// Layout. Every key starts with a tag byte; entries add their index as 8 bytes big-endian,
// so LevelDB's byte order is log order and a range of the log is a range of keys. Every value
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
//     that all fail their checksum) is what a torn, unsynced write looks like: those entries
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

export interface StorageOptions {
  /** Defaults to snapshotChunkBytesMax; tests lower it to exercise chunking cheaply. */
  readonly snapshotChunkBytesMax?: number;
}

/**
 * The durable part of one Ready, written as one batch: synced unless `mustSync` is false (a
 * Ready that only moves the commit index promises nothing that needs the disk's flush; a later
 * synced batch makes it durable in order, and a commit index lost in a crash is learned again
 * from the leader).
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
  if (index !== undefined) return `entry ${index} (key ${hex(key)})`;
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

function encodeEntry(e: Entry): Uint8Array {
  return packr.pack([e.index, e.term, e.type, e.data, e.client?.clientId ?? null, e.client?.seq ?? null]);
}

function decodeEntry(payload: Uint8Array): Entry | undefined {
  const v: unknown = packr.unpack(payload);
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

interface Recovered {
  readonly state: PersistedState;
  readonly chunkCount: number;
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
  const hardState = openSingleton(hardStateKey, hardStateValue, decodeHardState) ?? { term: 0, vote: 0, commit: 0 };
  const stored = openSingleton(snapshotMetaKey, metaValue, decodeSnapshotMeta);
  const snapshot = stored === undefined ? undefined : reassembleSnapshot(stored, chunks);
  if (stored === undefined && chunks.length > 0) {
    throw new StorageCorruptError(describeKey((chunks[0] as RawRecord)[0]), 'snapshot chunks without snapshot meta');
  }
  const snapIndex = snapshot?.meta.index ?? 0;

  // Entries at or below the snapshot are covered by it; they stay until compact() deletes
  // them and are not read.
  let staleFirst = snapIndex + 1;
  let staleLast = 0;
  const live: { key: Uint8Array; index: number; entry: Entry | undefined }[] = [];
  for (const [key, value] of entries) {
    const index = entryKeyIndex(key);
    if (index === undefined) throw new StorageCorruptError(describeKey(key), 'malformed entry key');
    if (index <= snapIndex) {
      staleFirst = Math.min(staleFirst, index);
      staleLast = Math.max(staleLast, index);
      continue;
    }
    const payload = openRecord(key, value);
    if (payload === undefined) {
      live.push({ key, index, entry: undefined });
      continue;
    }
    const entry = decodeEntry(payload);
    if (entry === undefined || entry.index !== index) {
      throw new StorageCorruptError(describeKey(key), 'checksum passes but the entry does not decode to its index', index);
    }
    live.push({ key, index, entry });
  }

  // The good prefix: contiguous from snapIndex + 1 with valid checksums.
  let good = 0;
  let expected = snapIndex + 1;
  while (good < live.length) {
    const r = live[good] as (typeof live)[number];
    if (r.entry === undefined || r.index !== expected) break;
    good++;
    expected++;
  }
  const warnings: StorageWarning[] = [];
  const dropKeys: Uint8Array[] = [];
  const rest = live.slice(good);
  const first = rest[0];
  if (first !== undefined) {
    const problem =
      first.entry === undefined
        ? `checksum mismatch at index ${first.index}`
        : `gap: index ${expected} missing before ${first.index}`;
    const torn = rest.length === 1 || rest.every((r) => r.entry === undefined);
    if (!torn) {
      const after = rest.slice(1).filter((r) => r.entry !== undefined).length;
      throw new StorageCorruptError(
        describeKey(first.key),
        `${problem}, followed by ${after} good entries: not a torn tail`,
        first.entry === undefined ? first.index : expected,
      );
    }
    if (hardState.commit >= expected) {
      throw new StorageCorruptError(
        describeKey(first.key),
        `${problem} in the tail, but entries up to ${hardState.commit} were durably committed`,
        first.entry === undefined ? first.index : expected,
      );
    }
    for (const r of rest) {
      const why = r.entry === undefined ? 'checksum mismatch' : `not contiguous (expected ${expected})`;
      warnings.push({ kind: 'torn-tail', index: r.index, message: `dropped torn tail entry ${r.index}: ${why}` });
      dropKeys.push(r.key);
    }
  }
  const kept = live.slice(0, good).map((r) => r.entry as Entry);
  const lastIndex = snapIndex + kept.length;
  if (hardState.commit > lastIndex) {
    throw new StorageCorruptError('hard state', `commit ${hardState.commit} beyond the last stored entry ${lastIndex}`);
  }
  const state: PersistedState =
    snapshot === undefined ? { hardState, entries: kept } : { hardState, snapshot, entries: kept };
  return {
    state,
    chunkCount: stored?.chunkCount ?? 0,
    storedFirst: staleFirst,
    storedLast: kept.length > 0 ? lastIndex : Math.max(staleLast, staleFirst - 1),
    warnings,
    dropKeys,
  };
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
    const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
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
    const ops: BatchOp[] = [];
    let snapMeta = this.snapMeta;
    let chunkCount = this.chunkCount;
    let storedFirst = this.storedFirst;
    let storedLast = this.storedLast;
    if (rd.snapshot !== undefined) {
      for (let i = storedFirst; i <= storedLast; i++) ops.push({ type: 'del', key: entryKey(i) });
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
      for (let i = first.index; i <= storedLast; i++) ops.push({ type: 'del', key: entryKey(i) });
      rd.entries.forEach((e, i) => {
        assert(e.index === first.index + i, `storage: entries not contiguous at ${e.index}`);
        const key = entryKey(e.index);
        ops.push({ type: 'put', key, value: sealRecord(key, encodeEntry(e)) });
      });
      storedLast = first.index + rd.entries.length - 1;
      if (storedFirst > storedLast) storedFirst = first.index;
    }
    const hs = rd.hardState;
    if (hs !== undefined) {
      const prev = this.hardState;
      assert(hs.term >= prev.term, `storage: term regresses ${prev.term} -> ${hs.term}`);
      assert(hs.commit >= prev.commit, `storage: commit regresses ${prev.commit} -> ${hs.commit}`);
      assert(hs.term > prev.term || prev.vote === 0 || hs.vote === prev.vote, `storage: vote changes within term ${hs.term}`);
      ops.push({ type: 'put', key: hardStateKey, value: sealRecord(hardStateKey, encodeHardState(hs)) });
    }
    const commit = (hs ?? this.hardState).commit;
    assert(commit <= Math.max(snapIndex, storedLast), `storage: commit ${commit} beyond the durable log`);
    await this.write(ops, rd.mustSync !== false, 'save');
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
    const ops: BatchOp[] = [];
    const hi = Math.min(index - 1, this.storedLast);
    for (let i = this.storedFirst; i <= hi; i++) ops.push({ type: 'del', key: entryKey(i) });
    await this.write(ops, false, 'compact');
    this.storedFirst = index;
    if (this.storedLast < index) this.storedLast = index - 1;
    this.checkInvariants();
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
      await this.db.batch(ops, { sync });
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
