// Goal: no byte string makes a decoder fail other than with OfDecodeError, and none makes it hang.
// Method: seeded valid messages of every kind, cut at every length (with the header length
// patched to match, so decoding goes deep), plus thousands of random byte flips and pure garbage;
// each decode is timed against a generous bound.

import t from 'tap';
import { decodeActions } from '../../agent/openflow/actions.js';
import { decodeMessage, encodeMessage } from '../../agent/openflow/messages.js';
import { OfDecodeError } from '../../agent/openflow/wire.js';
import { genActions, genMessage, messageKinds } from '../helpers/ovs-openflow-gen.js';
import { Rng } from '../helpers/seeded-rng.js';

const seed = Number(process.env.OVNTS_SEED ?? 2024);
const mutationsN = Number(process.env.OVNTS_FUZZ ?? 40);
// A hang detector, not a speed test: generous so a GC pause on a busy machine does not trip it.
const decodeMsMax = 1000;

interface Tally {
  ok: number;
  typed: number;
  other: string[];
  slowest: number;
}

function attempt(tally: Tally, f: () => unknown, label: string): void {
  const t0 = performance.now();
  try {
    f();
    tally.ok++;
  } catch (err) {
    if (err instanceof OfDecodeError) tally.typed++;
    else if (tally.other.length < 5) tally.other.push(`${label}: ${(err as Error).stack ?? String(err)}`);
  }
  tally.slowest = Math.max(tally.slowest, performance.now() - t0);
}

/** A copy of 'b' cut to n bytes, with the OpenFlow header's length patched to n when it fits. */
function cut(b: Buffer, n: number): Buffer {
  const c = Buffer.from(b.subarray(0, n));
  if (n >= 4) c.writeUInt16BE(n, 2);
  return c;
}

t.test('truncated, mutated and garbage messages only ever raise OfDecodeError', async (t) => {
  const rng = new Rng(seed);
  const tally: Tally = { ok: 0, typed: 0, other: [], slowest: 0 };
  for (const kind of messageKinds) {
    for (let i = 0; i < 8; i++) {
      const bytes = encodeMessage(genMessage(rng, kind), rng.u32());
      for (let n = 0; n <= bytes.length; n++) {
        attempt(tally, () => decodeMessage(cut(bytes, n)), `${kind} cut at ${n}`);
        attempt(tally, () => decodeMessage(bytes.subarray(0, n)), `${kind} raw cut at ${n}`);
      }
      for (let k = 0; k < mutationsN; k++) {
        const m = Buffer.from(bytes);
        const flips = rng.int(1, 4);
        for (let j = 0; j < flips; j++) m[rng.int(0, m.length - 1)] = rng.int(0, 255);
        if (rng.chance(0.7) && m.length >= 4) m.writeUInt16BE(m.length, 2);
        attempt(tally, () => decodeMessage(m), `${kind} mutation ${k}`);
      }
    }
  }
  for (let k = 0; k < 5000; k++) {
    const g = Buffer.from(Array.from({ length: rng.int(0, 120) }, () => rng.int(0, 255)));
    if (g.length >= 4 && rng.chance(0.8)) {
      g.writeUInt16BE(g.length, 2);
      g[0] = 6;
    }
    attempt(tally, () => decodeMessage(g), `garbage ${k}`);
    attempt(tally, () => decodeActions(g), `garbage actions ${k}`);
  }
  t.same(tally.other, [], `only typed errors (seed ${seed})`);
  t.ok(tally.typed > 1000, `${tally.typed} rejections, ${tally.ok} accepted`);
  t.ok(tally.slowest < decodeMsMax, `slowest decode ${tally.slowest.toFixed(2)} ms`);
});

t.test('action lists cut and mutated', async (t) => {
  const rng = new Rng(seed + 1);
  const tally: Tally = { ok: 0, typed: 0, other: [], slowest: 0 };
  for (let i = 0; i < 300; i++) {
    const m = encodeMessage({ kind: 'packet_out', bufferId: 0, inPort: 1, actions: genActions(rng, 8), data: Buffer.alloc(0) }, 1);
    for (let n = 0; n <= m.length; n += rng.int(1, 5)) attempt(tally, () => decodeMessage(cut(m, n)), `packet_out cut ${n}`);
    for (let k = 0; k < 20; k++) {
      const x = Buffer.from(m);
      x[rng.int(8, x.length - 1)] = rng.int(0, 255);
      attempt(tally, () => decodeMessage(x), `packet_out flip ${k}`);
    }
  }
  t.same(tally.other, [], `only typed errors (seed ${seed})`);
  t.ok(tally.slowest < decodeMsMax, `slowest decode ${tally.slowest.toFixed(2)} ms`);
});

t.test('deeply nested clone is refused, not recursed into', async (t) => {
  // clone(clone(clone(...))) 40 deep, each NXAST_CLONE header 16 bytes wrapping the next.
  let inner = Buffer.alloc(0);
  for (let i = 0; i < 40; i++) {
    const h = Buffer.from('ffff0000000023200' + '02a000000000000', 'hex');
    h.writeUInt16BE(16 + inner.length, 2);
    inner = Buffer.concat([h, inner]);
  }
  t.throws(() => decodeActions(inner), OfDecodeError);
});
