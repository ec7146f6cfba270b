// Goal: RaftStorage gives back exactly what was saved across close and reopen, drops only a
// torn tail (with a warning), and refuses to open a log damaged anywhere else.
// Method: round trips in fresh t.testdir()s, damage written with a raw Level handle, and
// seeded random save sequences compared after each reopen with MemoryDisk as the model.

import t, { type Test } from 'tap';
import zlib from 'node:zlib';
import { Level } from 'level';
import { pack, unpack } from 'msgpackr';
import { crc32, crc32Table } from '../../cluster/crc32.js';
import { Prng } from '../../cluster/prng.js';
import { RaftStorage, StorageCorruptError, StorageError, recordBytesMax } from '../../cluster/storage.js';
import type { StorageOptions } from '../../cluster/storage.js';
import type { ConfState, Entry, HardState, PersistedState, Snapshot } from '../../cluster/types.js';
import { MemoryDisk } from './memory-disk.js';

const conf: ConfState = { voters: [1, 2, 3], learners: [4], removed: [5] };

function entry(index: number, term: number, data: Uint8Array = Uint8Array.of(index % 256, term % 256)): Entry {
  return { index, term, type: 'normal', data };
}

function entries(lo: number, hi: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = lo; i <= hi; i++) out.push(entry(i, term));
  return out;
}

function bytes(n: number, seed: number): Uint8Array {
  const rng = new Prng(seed);
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = rng.nextU32() & 0xff;
  return b;
}

// The key layout, written out independently of storage.ts: tag 0x04, then the index of the
// record's first entry as 8 bytes big-endian.
function entryKey(index: number): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = 0x04;
  const view = new DataView(key.buffer);
  view.setUint32(1, Math.floor(index / 0x1_0000_0000));
  view.setUint32(5, index % 0x1_0000_0000);
  return key;
}

/** A record as storage.ts writes it: CRC-32 over key ++ payload (4 bytes, big-endian), then the payload. */
function sealRecord(key: Uint8Array, payload: Uint8Array): Uint8Array {
  const value = new Uint8Array(4 + payload.length);
  new DataView(value.buffer).setUint32(0, crc32(payload, crc32(key)));
  value.set(payload, 4);
  return value;
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

function rawDb(dir: string): Level<Uint8Array, Uint8Array> {
  return new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
}

/** Opens the store raw, lets `f` damage it, closes it. The storage must be closed. */
async function damage(dir: string, f: (db: Level<Uint8Array, Uint8Array>) => Promise<void>): Promise<void> {
  const db = rawDb(dir);
  await db.open();
  await f(db);
  await db.close();
}

/** Flips one payload bit of the record under `key`, so that its checksum fails. */
async function flipBit(db: Level<Uint8Array, Uint8Array>, key: Uint8Array): Promise<void> {
  const value = await db.get(key);
  if (value === undefined) throw new Error(`no record under ${Buffer.from(key).toString('hex')}`);
  const bad = Uint8Array.from(value);
  bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0x01;
  await db.put(key, bad);
}

async function reopen(s: RaftStorage, options: StorageOptions = {}): Promise<RaftStorage> {
  await s.close();
  return RaftStorage.open(s.dir, options);
}

/** The entry indexes in the stored record under `key` (payload: msgpack list of entry tuples). */
async function recordIndexes(db: Level<Uint8Array, Uint8Array>, key: Uint8Array): Promise<number[]> {
  const value = await db.get(key);
  if (value === undefined) return [];
  return (unpack(value.subarray(4)) as [number][]).map((tuple) => tuple[0]);
}

/**
 * A storage in a fresh directory holding entries 1..last (term 1) and hard state `hs`, saved
 * one entry per save so that each entry is its own record and can be damaged alone.
 */
async function withLog(dir: string, last: number, hs: HardState): Promise<void> {
  const s = await RaftStorage.open(dir);
  for (let i = 1; i <= last; i++) await s.save({ entries: entries(i, i, 1) });
  await s.save({ entries: [], hardState: hs });
  await s.close();
}

t.test('crc32 matches the reference values and zlib', (tt) => {
  for (const [name, f] of [['crc32', crc32], ['crc32Table', crc32Table]] as const) {
    tt.equal(f(new TextEncoder().encode('123456789')), 0xcbf43926, `${name}: the standard check value`);
    tt.equal(f(new Uint8Array(0)), 0, `${name}: empty`);
  }
  const rng = new Prng(11);
  for (let round = 0; round < 200; round++) {
    const b = bytes(rng.nextInt(300), round);
    const cut = rng.nextInt(b.length + 1);
    tt.equal(crc32(b.subarray(cut), crc32(b.subarray(0, cut))), crc32(b), 'incremental equals whole');
    tt.equal(crc32Table(b.subarray(cut), crc32Table(b.subarray(0, cut))), crc32(b), 'the fallback, incremental, equals the one in use');
    // zlib.crc32 exists from Node 20.15; where it does, it is the reference.
    if (typeof zlib.crc32 === 'function') tt.equal(crc32(b), zlib.crc32(b));
  }
  tt.end();
});

t.test('round trip: hard state and entries survive close and reopen', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  tt.same(s.load(), { hardState: { term: 0, vote: 0, commit: 0 }, entries: [] }, 'a new store is empty');
  tt.same(s.warnings, []);
  const written: Entry[] = [
    { index: 1, term: 1, type: 'conf-change', data: Uint8Array.of(9, 9) },
    { index: 2, term: 1, type: 'empty', data: new Uint8Array(0) },
    { index: 3, term: 2, type: 'normal', data: bytes(5000, 1), client: { clientId: 'c-1', seq: 42 } },
  ];
  await s.save({ entries: written, hardState: { term: 2, vote: 3, commit: 2 } });
  s = await reopen(s);
  tt.strictSame(s.load(), { hardState: { term: 2, vote: 3, commit: 2 }, entries: written });
  tt.equal(s.firstIndex(), 1);
  tt.equal(s.lastIndex(), 3);
  tt.same(s.warnings, []);
  // An empty Ready writes nothing; the hard state alone may change.
  await s.save({ entries: [] });
  await s.save({ entries: [], hardState: { term: 3, vote: 0, commit: 3 } });
  s = await reopen(s);
  tt.strictSame(s.load().hardState, { term: 3, vote: 0, commit: 3 });
  tt.equal(s.load().entries.length, 3);
  await s.close();
});

t.test('an append overwrites a conflicting tail', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  await s.save({ entries: entries(1, 5, 1), hardState: { term: 1, vote: 1, commit: 2 } });
  await s.save({ entries: entries(3, 4, 2), hardState: { term: 2, vote: 2, commit: 2 } });
  tt.equal(s.lastIndex(), 4);
  s = await reopen(s);
  tt.strictSame(s.load().entries, [...entries(1, 2, 1), ...entries(3, 4, 2)], 'entry 5 of term 1 is gone');
  await s.close();
  const db = rawDb(dir);
  await db.open();
  const keys = await db.keys({ gte: Uint8Array.of(0x04), lt: Uint8Array.of(0x05) }).all();
  tt.strictSame(keys.map(hex), [entryKey(1), entryKey(3)].map(hex), 'the cut record is rewritten, the new one follows');
  tt.strictSame(await recordIndexes(db, entryKey(1)), [1, 2], 'entries 3..5 of term 1 are deleted on disk, not just hidden');
  tt.strictSame(await recordIndexes(db, entryKey(3)), [3, 4]);
  await db.close();
});

t.test('a local snapshot, then compaction', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  await s.save({ entries: entries(1, 10, 1), hardState: { term: 1, vote: 1, commit: 8 } });
  const snap: Snapshot = { meta: { index: 6, term: 1, conf }, data: bytes(100, 2) };
  await s.saveSnapshot(snap.meta, snap.data);
  // A crash between the snapshot and the compaction: the covered entries are ignored.
  s = await reopen(s);
  tt.strictSame(s.load(), { hardState: { term: 1, vote: 1, commit: 8 }, snapshot: snap, entries: entries(7, 10, 1) });
  tt.equal(s.firstIndex(), 7);
  await s.compact(7);
  s = await reopen(s);
  tt.strictSame(s.load(), { hardState: { term: 1, vote: 1, commit: 8 }, snapshot: snap, entries: entries(7, 10, 1) });
  await s.saveSnapshot({ index: 3, term: 1, conf }, bytes(10, 3));
  tt.equal(s.firstIndex(), 7, 'an older snapshot is ignored');
  // A snapshot at the last index leaves no entries after it.
  const snap2: Snapshot = { meta: { index: 10, term: 1, conf: { ...conf, electionTicks: 20 } }, data: bytes(50, 4) };
  await s.saveSnapshot(snap2.meta, snap2.data);
  await s.compact(11);
  tt.equal(s.lastIndex(), 10);
  await s.save({ entries: entries(11, 12, 2), hardState: { term: 2, vote: 0, commit: 11 } });
  s = await reopen(s);
  tt.strictSame(s.load(), { hardState: { term: 2, vote: 0, commit: 11 }, snapshot: snap2, entries: entries(11, 12, 2) });
  await s.close();
  const db = rawDb(dir);
  await db.open();
  const keys = await db.keys({ gte: Uint8Array.of(0x04), lt: Uint8Array.of(0x05) }).all();
  tt.strictSame(keys.map(hex), [entryKey(11)].map(hex), 'compacted records are deleted on disk');
  tt.strictSame(await recordIndexes(db, entryKey(11)), [11, 12], 'one save is one record');
  await db.close();
});

t.test('a snapshot from the leader replaces the whole log', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  await s.save({ entries: entries(1, 5, 1), hardState: { term: 1, vote: 0, commit: 2 } });
  const snap: Snapshot = { meta: { index: 20, term: 3, conf }, data: bytes(300, 5) };
  await s.save({ snapshot: snap, entries: entries(21, 22, 3), hardState: { term: 3, vote: 0, commit: 20 } });
  s = await reopen(s);
  tt.strictSame(s.load(), { hardState: { term: 3, vote: 0, commit: 20 }, snapshot: snap, entries: entries(21, 22, 3) });
  await s.close();
});

t.test('a 3.5 MiB snapshot is chunked and reassembled byte-identical', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  await s.save({ entries: entries(1, 3, 1), hardState: { term: 1, vote: 0, commit: 3 } });
  const data = bytes(3.5 * 1024 * 1024, 6);
  await s.saveSnapshot({ index: 3, term: 1, conf }, data);
  s = await reopen(s);
  const got = s.load().snapshot;
  tt.equal(got?.data.byteLength, data.byteLength);
  tt.ok(got !== undefined && Buffer.compare(got.data, data) === 0, 'byte-identical');
  await s.close();
  const countChunks = async (): Promise<number> => {
    const db = rawDb(dir);
    await db.open();
    const keys = await db.keys({ gte: Uint8Array.of(0x03), lt: Uint8Array.of(0x04) }).all();
    await db.close();
    return keys.length;
  };
  tt.equal(await countChunks(), 4, 'four chunks of at most 1 MiB');
  // A smaller snapshot replaces it and leaves no stale chunk behind.
  s = await RaftStorage.open(dir);
  await s.save({ entries: entries(4, 4, 1), hardState: { term: 1, vote: 0, commit: 4 } });
  const small = bytes(10, 7);
  await s.saveSnapshot({ index: 4, term: 1, conf }, small);
  s = await reopen(s);
  tt.strictSame(s.load().snapshot?.data, small);
  await s.close();
  tt.equal(await countChunks(), 1);
});

t.test('a save is one record, split at recordBytesMax; a record may straddle the snapshot', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  const big = (i: number): Entry => ({ index: i, term: 1, type: 'normal', data: bytes(Math.ceil(recordBytesMax * 0.4), i) });
  await s.save({ entries: [big(1), big(2), big(3), big(4), big(5)], hardState: { term: 1, vote: 1, commit: 5 } });
  await s.save({ entries: entries(6, 9, 1), hardState: { term: 1, vote: 1, commit: 8 } });
  await s.saveSnapshot({ index: 7, term: 1, conf }, bytes(10, 1));
  await s.compact(8);
  s = await reopen(s);
  tt.strictSame(s.load().entries, entries(8, 9, 1), 'the straddling record serves the entries after the snapshot');
  await s.close();
  const db = rawDb(dir);
  await db.open();
  const keys = await db.keys({ gte: Uint8Array.of(0x04), lt: Uint8Array.of(0x05) }).all();
  tt.strictSame(keys.map(hex), [entryKey(6)].map(hex), 'the big save became records from 1, 3 and 5; all compacted away');
  await db.close();
});

t.test('a record in the layout before records (one entry tuple) still reads', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 2, { term: 1, vote: 1, commit: 1 });
  const key = entryKey(3);
  const tuple = pack([3, 1, 'normal', Buffer.from([7]), null, null]);
  await damage(dir, (db) => db.put(key, sealRecord(key, tuple)));
  const s = await RaftStorage.open(dir);
  tt.strictSame(s.load().entries.map((e) => e.index), [1, 2, 3]);
  tt.same(s.warnings, []);
  await s.close();
});

t.test('a commit-only save is deferred to the next write; a crash loses only that hint', async (tt) => {
  const dir = tt.testdir();
  const crash = async (st: RaftStorage): Promise<void> => (st as unknown as { db: Level<Uint8Array, Uint8Array> }).db.close();
  let s = await RaftStorage.open(dir);
  await s.save({ entries: entries(1, 3, 1), hardState: { term: 1, vote: 1, commit: 1 } });
  await s.save({ entries: [], hardState: { term: 1, vote: 1, commit: 2 }, mustSync: false });
  await crash(s);
  s = await RaftStorage.open(dir);
  tt.strictSame(s.load().hardState, { term: 1, vote: 1, commit: 1 }, 'the unwritten commit index is lost in a crash');
  await s.save({ entries: [], hardState: { term: 1, vote: 1, commit: 2 }, mustSync: false });
  await s.save({ entries: entries(4, 4, 1) });
  await crash(s);
  s = await RaftStorage.open(dir);
  tt.strictSame(s.load().hardState, { term: 1, vote: 1, commit: 2 }, 'it rode with the next write');
  await s.save({ entries: [], hardState: { term: 1, vote: 1, commit: 3 }, mustSync: false });
  s = await reopen(s);
  tt.strictSame(s.load().hardState, { term: 1, vote: 1, commit: 3 }, 'close writes it');
  await s.save({ entries: [], hardState: { term: 1, vote: 1, commit: 4 }, mustSync: false });
  await s.saveSnapshot({ index: 4, term: 1, conf }, bytes(10, 1));
  await crash(s);
  s = await RaftStorage.open(dir);
  tt.equal(s.load().hardState.commit, 4, 'a snapshot index counts as committed');
  await s.close();
});

t.test('keys sort in log order across byte boundaries', async (tt) => {
  const dir = tt.testdir();
  let s = await RaftStorage.open(dir);
  const base = 0x1_0000_0000 - 3;
  const snap: Snapshot = { meta: { index: base, term: 1, conf }, data: new Uint8Array(0) };
  const written = entries(base + 1, base + 5, 1);
  await s.save({ snapshot: snap, entries: written, hardState: { term: 1, vote: 0, commit: base } });
  s = await reopen(s);
  tt.strictSame(s.load().entries, written, 'contiguous across the 32-bit boundary');
  await s.close();
});

t.test('torn tail: a last entry failing its checksum is dropped with a warning', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 5, { term: 1, vote: 1, commit: 3 });
  await damage(dir, (db) => flipBit(db, entryKey(5)));
  let s = await RaftStorage.open(dir);
  tt.strictSame(s.load().entries, entries(1, 4, 1), 'earlier entries intact');
  tt.equal(s.warnings.length, 1);
  tt.match(s.warnings[0], { kind: 'torn-tail', index: 5, message: /record from 5.*checksum/ });
  tt.equal(s.lastIndex(), 4);
  s = await reopen(s);
  tt.same(s.warnings, [], 'the dropped record was deleted');
  // The log continues where the good prefix ends.
  await s.save({ entries: [entry(5, 2)], hardState: { term: 2, vote: 0, commit: 5 } });
  s = await reopen(s);
  tt.strictSame(s.load().entries, [...entries(1, 4, 1), entry(5, 2)]);
  await s.close();
});

t.test('torn tail: several last entries failing their checksums are all dropped', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 6, { term: 1, vote: 1, commit: 3 });
  await damage(dir, async (db) => {
    await flipBit(db, entryKey(5));
    await flipBit(db, entryKey(6));
  });
  const s = await RaftStorage.open(dir);
  tt.strictSame(s.load().entries, entries(1, 4, 1));
  tt.same(
    s.warnings.map((w) => w.index),
    [5, 6],
  );
  await s.close();
});

t.test('torn tail: a gap before the last entry drops it', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 5, { term: 1, vote: 1, commit: 3 });
  await damage(dir, (db) => db.del(entryKey(4)));
  const s = await RaftStorage.open(dir);
  tt.strictSame(s.load().entries, entries(1, 3, 1));
  tt.match(s.warnings, [{ kind: 'torn-tail', index: 5, message: /not contiguous/ }]);
  await s.close();
});

t.test('a torn tail below the durable commit index is corruption', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 5, { term: 1, vote: 1, commit: 5 });
  await damage(dir, (db) => flipBit(db, entryKey(5)));
  await tt.rejects(RaftStorage.open(dir), { name: 'StorageCorruptError', kind: 'corrupt', index: 5, message: /committed/ });
});

t.test('corrupt middle: open throws StorageCorruptError naming the index', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 6, { term: 1, vote: 1, commit: 2 });
  await damage(dir, (db) => flipBit(db, entryKey(3)));
  const err: unknown = await RaftStorage.open(dir).then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.ok(err instanceof StorageCorruptError, 'a StorageCorruptError');
  tt.ok(err instanceof StorageError, 'which is a StorageError, so the node stops on it');
  tt.match(err, { kind: 'corrupt', index: 3, message: /record from 3 .*checksum mismatch at index 3, followed by 3 good entries/ });
  // The failed open released the lock: the directory can be opened again (and fails again).
  await tt.rejects(RaftStorage.open(dir), { kind: 'corrupt', message: /record from 3/ });
});

t.test('gap in the middle: open throws', async (tt) => {
  const dir = tt.testdir();
  await withLog(dir, 6, { term: 1, vote: 1, commit: 2 });
  await damage(dir, (db) => db.del(entryKey(3)));
  await tt.rejects(RaftStorage.open(dir), { kind: 'corrupt', index: 3, message: /index 3 missing before 4/ });
});

t.test('damage outside the log is corruption', async (tt) => {
  tt.test('hard state', async (ttt) => {
    const dir = ttt.testdir();
    await withLog(dir, 2, { term: 1, vote: 1, commit: 1 });
    await damage(dir, (db) => flipBit(db, Uint8Array.of(0x01)));
    await ttt.rejects(RaftStorage.open(dir), { kind: 'corrupt', message: /hard state: checksum mismatch/ });
  });
  tt.test('a snapshot chunk', async (ttt) => {
    const dir = ttt.testdir();
    let s = await RaftStorage.open(dir, { snapshotChunkBytesMax: 100 });
    await s.save({ entries: entries(1, 2, 1), hardState: { term: 1, vote: 1, commit: 2 } });
    await s.saveSnapshot({ index: 2, term: 1, conf }, bytes(350, 8));
    s = await reopen(s);
    ttt.equal(s.load().snapshot?.data.byteLength, 350);
    await s.close();
    await damage(dir, (db) => flipBit(db, Uint8Array.of(0x03, 0, 0, 0, 2)));
    await ttt.rejects(RaftStorage.open(dir), { kind: 'corrupt', message: /snapshot chunk 2/ });
    await damage(dir, (db) => db.del(Uint8Array.of(0x03, 0, 0, 0, 3)));
    await ttt.rejects(RaftStorage.open(dir), { kind: 'corrupt', message: /snapshot chunk/ });
  });
  tt.test('a record whose checksum passes but does not decode', async (ttt) => {
    const dir = ttt.testdir();
    await withLog(dir, 3, { term: 1, vote: 1, commit: 1 });
    const key = entryKey(3);
    await damage(dir, (db) => db.put(key, sealRecord(key, Uint8Array.of(0xc0))));
    await ttt.rejects(RaftStorage.open(dir), { kind: 'corrupt', index: 3, message: /does not decode/ });
  });
  tt.end();
});

t.test('LevelDB failures are StorageErrors of kind io', async (tt) => {
  const dir = tt.testdir();
  const s = await RaftStorage.open(dir);
  // LevelDB takes an exclusive lock on the directory.
  const err: unknown = await RaftStorage.open(dir).then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.ok(err instanceof StorageError && !(err instanceof StorageCorruptError));
  tt.match(err, { kind: 'io', message: /open/ });
  await s.close();
});

t.test('a failed write is a StorageError, and the storage refuses writes after it', async (tt) => {
  const dir = tt.testdir();
  const s = await RaftStorage.open(dir);
  await s.save({ entries: [entry(1, 1)] });
  // Pull LevelDB out from under it: the next batch fails inside LevelDB.
  await (s as unknown as { db: Level<Uint8Array, Uint8Array> }).db.close();
  await tt.rejects(s.save({ entries: [entry(2, 1)] }), { name: 'StorageError', kind: 'io', message: /^save: / });
  await tt.rejects(s.save({ entries: [entry(2, 1)] }), { name: 'StorageError', kind: 'io', message: /refused/ });
  tt.equal(s.lastIndex(), 1, 'the failed write changed nothing');
});

t.test('one write at a time', async (tt) => {
  const dir = tt.testdir();
  const s = await RaftStorage.open(dir);
  const first = s.save({ entries: [entry(1, 1)] });
  await tt.rejects(s.save({ entries: [entry(2, 1)] }), { name: 'AssertionError', message: /in flight/ });
  await first;
  await tt.rejects(s.save({ entries: [entry(5, 1)] }), { name: 'AssertionError', message: /gap/ });
  await s.close();
});

// The model is MemoryDisk, the simulator's disk: RaftStorage must be a drop-in for it.
t.test('fuzz: random saves equal the in-memory model after every reopen', async (tt) => {
  const stepsPerSeed = 250;
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    await tt.test(`seed ${seed}`, (ts) => fuzzOne(ts, seed, stepsPerSeed));
  }
});

async function fuzzOne(tt: Test, seed: number, steps: number): Promise<void> {
  const rng = new Prng(seed);
  const dir = tt.testdir();
  const options: StorageOptions = { snapshotChunkBytesMax: 64 };
  const model = new MemoryDisk({ hardState: { term: 0, vote: 0, commit: 0 }, entries: [] });
  let s = await RaftStorage.open(dir, options);
  let reopens = 0;
  for (let step = 0; step < steps; step++) {
    const hs = model.hardState;
    const op = rng.nextInt(10);
    const at = `seed ${seed} step ${step}`;
    if (op < 5) {
      // Append, sometimes overwriting an uncommitted tail, sometimes with a new term.
      const lo = Math.max(model.firstIndex(), hs.commit + 1);
      const from = rng.chance(0.7) ? model.lastIndex() + 1 : lo + rng.nextInt(model.lastIndex() + 2 - lo);
      const term = hs.term + (rng.chance(0.3) ? 1 : 0);
      const es: Entry[] = [];
      for (let i = 0; i < 1 + rng.nextInt(4); i++) es.push(entry(from + i, Math.max(term, 1), bytes(rng.nextInt(40), seed * 1000 + step)));
      const last = from + es.length - 1;
      const newHs = { term: Math.max(term, 1), vote: term > hs.term ? rng.nextInt(4) : hs.vote, commit: Math.min(hs.commit + rng.nextInt(3), last) };
      const rd = { entries: es, hardState: newHs };
      model.persist(rd);
      await s.save(rd);
    } else if (op < 7) {
      // A local snapshot at a committed index, usually followed by compaction.
      const snapIndex = model.firstIndex() - 1;
      if (hs.commit > snapIndex) {
        const index = snapIndex + 1 + rng.nextInt(hs.commit - snapIndex);
        const term = model.entries[index - model.firstIndex()]?.term;
        if (term === undefined) throw new Error(`${at}: model has no entry ${index}`);
        const snap: Snapshot = { meta: { index, term, conf }, data: bytes(rng.nextInt(300), step) };
        model.compact(snap);
        await s.saveSnapshot(snap.meta, snap.data);
        if (rng.chance(0.8)) await s.compact(index + 1 - rng.nextInt(3));
      }
    } else if (op < 8) {
      // A snapshot from the leader, with entries after it.
      const index = hs.commit + rng.nextInt(8);
      const term = hs.term + 1;
      const snap: Snapshot = { meta: { index, term, conf }, data: bytes(rng.nextInt(200), step + 7) };
      const rd = { snapshot: snap, entries: entries(index + 1, index + rng.nextInt(3), term), hardState: { term, vote: 0, commit: index } };
      model.persist(rd);
      await s.save(rd);
    } else {
      s = await reopen(s, options);
      reopens++;
      if (!sameState(tt, s.load(), model.load(), at)) return;
      tt.same(s.warnings, [], `${at}: no warnings after a clean close`);
    }
    if (s.lastIndex() !== model.lastIndex() || s.firstIndex() !== model.firstIndex()) {
      tt.fail(`${at}: indices differ: storage ${s.firstIndex()}..${s.lastIndex()}, model ${model.firstIndex()}..${model.lastIndex()}`);
      return;
    }
  }
  s = await reopen(s, options);
  sameState(tt, s.load(), model.load(), `seed ${seed} end`);
  tt.ok(reopens > 0, `seed ${seed}: reopened ${reopens} times`);
  await s.close();
}

/** One assertion per comparison, so a long fuzz run reports one line per reopen. */
function sameState(tt: Test, got: PersistedState, want: PersistedState, at: string): boolean {
  return tt.strictSame(got, want, `${at}: reopened state equals the model`);
}

t.test('measurement: latency of a single-entry synced save', async (tt) => {
  const dir = tt.testdir();
  const s = await RaftStorage.open(dir);
  const samplesMs: number[] = [];
  const data = bytes(100, 9);
  for (let i = 1; i <= 300; i++) {
    const start = process.hrtime.bigint();
    await s.save({ entries: [entry(i, 1, data)], hardState: { term: 1, vote: 1, commit: i - 1 } });
    samplesMs.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  await s.close();
  samplesMs.sort((a, b) => a - b);
  const q = (p: number): number => samplesMs[Math.floor(p * (samplesMs.length - 1))] as number;
  tt.comment(`save (1 entry of 100 bytes + hard state, sync): p50 ${q(0.5).toFixed(3)} ms, p90 ${q(0.9).toFixed(3)} ms, p99 ${q(0.99).toFixed(3)} ms over ${samplesMs.length}`);
  tt.pass('measured (not asserted)');
});
