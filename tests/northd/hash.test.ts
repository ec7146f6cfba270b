// MurmurHash3 x86-128 against its published vectors: SMHasher's verification value (0xB3ECE62A)
// and the empty-input digest; then the UUID shape and separation of hashUuid, and the string
// path (encoded into a scratch buffer) against encoding then hashing.
import t from 'tap';
import { hashUuid, murmur3x86x128, murmur3x86x128Text } from '../../northd/hash.js';

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
