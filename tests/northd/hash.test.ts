// MurmurHash3 x86-128 against its published vectors: SMHasher's verification value (0xB3ECE62A)
// and the empty-input digest; then the UUID shape and separation of hashUuid, and the string
// path (encoded into a scratch buffer) against encoding then hashing, and hashUuid's ASCII path
// (parts written straight into the scratch buffer) and its written-text form against its definition;
// and the set sum of UUIDs (word-wise, modulo 2^32), independent of order and undone by removal,
// and SummedSet (members sorted when read, sum kept) against a plain Set through random changes.
import t from 'tap';
import { setEditBetween } from '../../ovsdb/datum.js';
import { EMPTY_SET_SUM, hashUuid, hashUuid5, hashUuid6, hashUuidOfWritten, murmur3x86x128, murmur3x86x128Text, setSumWith, SummedSet, textWords, uuidWords } from '../../northd/hash.js';

function hex(words: readonly number[]): string {
  // The digest as MurmurHash3 writes it: h1..h4, each little-endian.
  return words.map((w) => [0, 8, 16, 24].map((s) => ((w >>> s) & 0xff).toString(16).padStart(2, '0')).join('')).join('');
}

t.test('SMHasher verification value', async (t) => {
  const hashes = new Uint8Array(16 * 256);
  const key = new Uint8Array(256);
  for (let i = 0; i < 256; i++) {
    key[i] = i;
    const h = murmur3x86x128(key.subarray(0, i), 256 - i);
    for (let w = 0; w < 4; w++) for (let b = 0; b < 4; b++) hashes[i * 16 + w * 4 + b] = ((h[w] ?? 0) >>> (8 * b)) & 0xff;
  }
  const final = murmur3x86x128(hashes, 0);
  t.equal((final[0] >>> 0).toString(16), 'b3ece62a');
});

t.test('known digests', async (t) => {
  const enc = new TextEncoder();
  t.equal(hex(murmur3x86x128(new Uint8Array(0), 0)), '00000000000000000000000000000000');
  // Seeds change the digest of the same input.
  t.not(hex(murmur3x86x128(enc.encode('ovn'), 0)), hex(murmur3x86x128(enc.encode('ovn'), 1)));
});

t.test('hashUuid shape and separation', async (t) => {
  const u = hashUuid(['a', 'b']);
  t.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(hashUuid(['a', 'b']), u);
  t.not(hashUuid(['ab', '']), hashUuid(['a', 'b']));
  t.not(hashUuid(['a', 'b']), hashUuid(['b', 'a']));
});

t.test('the string fast path gives the digest of the encoded bytes', async (t) => {
  // The reference: encode to UTF-8, then hash the bytes.
  const enc = new TextEncoder();
  const texts = ['', 'a', 'ovn', 'x'.repeat(15), 'y'.repeat(16), 'z'.repeat(17), '12:Logical_Flow;36:00000000-0000-4000-8000-000000000001;', 'é', 'naïve-port-π', '\u{1F600}', `${'x'.repeat(20)}é${'y'.repeat(20)}`, `é${'z'.repeat(31)}`, 'w'.repeat(1365), 'w'.repeat(1366), `${'v'.repeat(3000)}é`];
  for (let n = 0; n < 64; n++) texts.push(Array.from({ length: n }, (_, i) => String.fromCharCode(32 + ((i * 7 + n) % 95))).join(''));
  for (const s of texts) t.same(murmur3x86x128Text(s, 0), murmur3x86x128(enc.encode(s), 0), JSON.stringify(s));
});

/** hashUuid's definition: the length-prefixed parts as one text, its UTF-8 bytes hashed. */
function hashUuidReference(parts: readonly string[]): string {
  const text = parts.map((p) => `${p.length}:${p};`).join('');
  const [h1, h2, h3, h4] = murmur3x86x128(new TextEncoder().encode(text), 0);
  const w2 = ((h2 & 0xffff0fff) | 0x00004000) >>> 0;
  const w3 = ((h3 & 0x3fffffff) | 0x80000000) >>> 0;
  const hex = [h1, w2, w3, h4].map((w) => w.toString(16).padStart(8, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

t.test('hashUuid, hashUuid5, hashUuid6 and hashUuidOfWritten follow the definition', async (t) => {
  const samples = ['', 'a', 'Logical_Flow', '15', 'ls_in_arp_rsp', 'é', 'naïve-port-π', '\u{1F600}', 'x'.repeat(9), 'y'.repeat(10), 'z'.repeat(100), 'w'.repeat(1000), 'v'.repeat(1500), `${'u'.repeat(700)}é`, 'ctl\u0001\n', 'q"uote\\d', 'w'.repeat(4090)];
  for (let n = 0; n < 40; n++) samples.push(Array.from({ length: n * 3 }, (_, i) => String.fromCharCode(32 + ((i * 11 + n) % 95))).join(''));
  let checked = 0;
  for (let i = 0; i < samples.length; i++) {
    for (let j = 0; j < samples.length; j += 3) {
      const parts = [samples[i] as string, samples[j] as string, samples[(i + j) % samples.length] as string, samples[(i * 7 + 1) % samples.length] as string, samples[(j * 5 + 2) % samples.length] as string];
      const want = hashUuidReference(parts);
      t.equal(hashUuid(parts), want);
      t.equal(hashUuid5(parts[0] as string, parts[1] as string, parts[2] as string, parts[3] as string, parts[4] as string), want);
      const six = [...parts, samples[(i + 3) % samples.length] as string];
      t.equal(hashUuid6(six[0] as string, six[1] as string, six[2] as string, six[3] as string, six[4] as string, six[5] as string), hashUuidReference(six));
      // A written text: the parts after the first as its pieces.
      t.equal(hashUuidOfWritten(parts[0] as string, parts.slice(1), (sink, pieces) => pieces.forEach((p) => sink.put(p))), hashUuidReference([parts[0] as string, parts.slice(1).join('')]));
      // Every other piece as a JSON string (putString): escapes and non-ASCII text included.
      const quoted = parts.slice(1).map((p, k) => (k % 2 === 1 ? JSON.stringify(p) : p)).join('');
      t.equal(hashUuidOfWritten(parts[0] as string, parts.slice(1), (sink, pieces) => pieces.forEach((p, k) => (k % 2 === 1 ? sink.putString(p) : sink.put(p)))), hashUuidReference([parts[0] as string, quoted]));
      checked++;
    }
  }
  t.ok(checked > 500, `${checked} part lists checked`);
});

t.test('setSumWith: the word-wise sum of a set, whatever the order, undone by taking members away', async (t) => {
  const a = '00000001-0002-0003-0004-000000000005';
  const b = 'ffffffff-ffff-ffff-ffff-fffffffffffe';
  // Words: a = [1, 0x00020003, 0x00040000, 5]; b = [0xffffffff, 0xffffffff, 0xffffffff, 0xfffffffe].
  t.same(setSumWith(EMPTY_SET_SUM, [a, b], 1), [0, 0x00020002, 0x0003ffff, 3], 'added word by word, carries dropped');
  const uuids = Array.from({ length: 50 }, (_, i) => hashUuid(['member', String(i)]));
  const all = setSumWith(EMPTY_SET_SUM, uuids, 1);
  t.same(setSumWith(EMPTY_SET_SUM, [...uuids].reverse(), 1), all, 'order-free');
  let step = EMPTY_SET_SUM;
  for (const u of uuids) step = setSumWith(step, [u], 1);
  t.same(step, all, 'one at a time gives the same sum');
  t.same(setSumWith(all, uuids.slice(10), -1), setSumWith(EMPTY_SET_SUM, uuids.slice(0, 10), 1), 'taking members away leaves the sum of the rest');
  t.same(setSumWith(all, uuids, -1), [0, 0, 0, 0], 'and all of them, the empty sum');
  t.not(setSumWith(EMPTY_SET_SUM, uuids.slice(1), 1).join(), all.join(), 'a member more or less changes the sum');
});

t.test('setSumWith reads UUIDs in place as uuidWords reads them, odd spellings included', async (t) => {
  // The reference: each member's words from uuidWords, added one by one.
  const reference = (sum: readonly number[], members: readonly string[], sign: 1 | -1): number[] => {
    const w = [...sum];
    for (const m of members) {
      const x = uuidWords(m);
      for (let i = 0; i < 4; i++) w[i] = ((w[i] as number) + sign * (x[i] as number)) >>> 0;
    }
    return w;
  };
  const members = [
    ...Array.from({ length: 200 }, (_, i) => hashUuid(['member', String(i)])),
    'FFFFFFFF-ABCD-Ef01-8000-00000000000A', // upper case, as parseInt reads it
    '0000000g-0000-0000-0000-000000000000', // not hex: parseInt's prefix
    '00000001-0002-0003-0004-000000000005-', // too long
    'not a uuid',
    '',
  ];
  const start = [7, 0xfffffff0, 0x80000000, 1];
  t.same(setSumWith(start as unknown as typeof EMPTY_SET_SUM, members, 1), reference(start, members, 1));
  t.same(setSumWith(start as unknown as typeof EMPTY_SET_SUM, members, -1), reference(start, members, -1));
});

t.test('SummedSet: sorted members and their sum, read after a few changes or many', async (t) => {
  // A fixed linear congruential sequence: the same run every time.
  let state = 12345;
  const next = (n: number): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state % n;
  };
  for (const [kind, words, member] of [
    ['uuids', uuidWords, (k: number) => hashUuid(['m', String(k)])],
    ['names', textWords, (k: number) => `port-${k}`],
  ] as const) {
    const s = new SummedSet(words);
    const model = new Set<string>();
    let reads = 0;
    for (let step = 0; step < 3000; step++) {
      const x = member(next(400));
      const adding = next(3) > 0;
      if ((adding ? s.add(x) : s.delete(x)) !== (adding ? !model.has(x) : model.has(x))) t.fail(`${kind}: ${adding ? 'add' : 'delete'} at step ${step} misreported a change`);
      if (adding) model.add(x);
      else model.delete(x);
      // Reads after 1 to 150 changes: both the splice path and the sort afresh.
      if (next(150) === 0 || step % 149 === 0) {
        reads++;
        const want = [...model].sort();
        if (JSON.stringify(s.items) !== JSON.stringify(want)) t.fail(`${kind}: members at step ${step}`);
        if (s.sum.join() !== setSumWith(EMPTY_SET_SUM, want, 1, words).join()) t.fail(`${kind}: sum at step ${step}`);
        if (s.size !== model.size) t.fail(`${kind}: size at step ${step}`);
      }
    }
    t.ok(reads > 20, `${kind}: ${reads} reads matched the model`);
  }
});

t.test('SummedSet.copy: each copy is recorded as the one before with what changed between them', async (t) => {
  let state = 777;
  const next = (n: number): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state % n;
  };
  const s = new SummedSet(textWords);
  let prev = s.copy();
  let recorded = 0;
  let unrecorded = 0;
  for (let round = 0; round < 400; round++) {
    // Up to 5 changes between copies, or 100 to 199 tries (more than 64 changes: the set keeps
    // none), some reads of items between.
    const changes = next(5) === 0 ? 100 + next(100) : next(6);
    for (let k = 0; k < changes; k++) {
      const x = `port-${next(300)}`;
      if (next(3) > 0) s.add(x);
      else s.delete(x);
      if (next(10) === 0) void s.items;
    }
    const copy = s.copy();
    t.not(copy, prev, 'a new array every time');
    const edit = setEditBetween(prev, copy);
    if (edit === undefined) unrecorded++;
    else {
      recorded++;
      const before = new Set(prev);
      const after = new Set(copy);
      const added = copy.filter((x) => !before.has(x));
      const removed = prev.filter((x) => !after.has(x));
      if (JSON.stringify(edit.added) !== JSON.stringify(added) || JSON.stringify(edit.removed) !== JSON.stringify(removed)) {
        t.fail(`round ${round}: recorded ${JSON.stringify(edit)}, but the copies differ by +${JSON.stringify(added)} -${JSON.stringify(removed)}`);
      }
    }
    prev = copy;
  }
  t.ok(recorded > 250, `${recorded} copies recorded with their edit, each equal to the real difference`);
  t.ok(unrecorded > 10, `${unrecorded} after too many changes were not (compared by walking instead)`);
});
