// Goal: a bind_vport packet-in claims the virtual port for this chassis with the packet's inport
// as virtual_parent, as ovn-controller 23.03's pinctrl does (put_vport_bindings): the keys read
// from the userdata, reg14 and the metadata; one SB update per claim, none for a port that is not
// virtual, unknown, or already claimed here through that parent; the latest parent wins; a full
// table drops new claims. Method: userdata compiled from the action text by our compiler, a fake
// SB lookup and transact that records, an injected timer.

import t from 'tap';
import { ACTION_OPCODE } from '../../agent/compile/tables.js';
import type { MaskedValue } from '../../agent/openflow/types.js';
import { decidePacketIn } from '../../agent/pinctrl/handlers.js';
import { Pinctrl, VportBindingWriter, type VportLookup, type VportPort } from '../../agent/pinctrl/index.js';
import type { WriterTimers } from '../../agent/pinctrl/mac-binding-writer.js';
import { controllerUserdata, full, hex } from './pinctrl-fixtures.js';

const M = (o: Record<string, bigint>): Map<string, MaskedValue> =>
  new Map(Object.entries(o).map(([k, v]) => [k, { value: v, mask: k === 'metadata' ? full(64) : full(32) }]));
const US = '11111111-1111-4111-8111-111111111111';
const GARP = hex('ffffffffffff 0a0000000001 0806 0001 0800 0604 0001 0a0000000001 0a000064 000000000000 0a000064');

/** Datapath 5: vip (key 9, virtual), vm1 (key 1), vm2 (key 2); vif (key 3) is no virtual port. */
function lookup(over: Partial<Record<number, Partial<VportPort>>> = {}, chassis: string | null = US): VportLookup {
  const ports: Record<number, VportPort> = {
    9: { uuid: 'pb-vip', logicalPort: 'vip', type: 'virtual', chassis: undefined, virtualParent: undefined, ...over[9] },
    1: { uuid: 'pb-vm1', logicalPort: 'vm1', type: '', chassis: US, virtualParent: undefined },
    2: { uuid: 'pb-vm2', logicalPort: 'vm2', type: '', chassis: US, virtualParent: undefined },
    3: { uuid: 'pb-vif', logicalPort: 'vif', type: '', chassis: undefined, virtualParent: undefined },
  };
  return { port: (dp, key) => (dp === 5 ? ports[key] : undefined), chassisUuid: () => chassis ?? undefined };
}

/** Timers run by hand. */
function manualTimers(): WriterTimers & { run(): void } {
  const queue: (() => void)[] = [];
  return {
    now: () => 0,
    setTimeout: (f) => { queue.push(f); return queue.length; },
    clearTimeout: () => undefined,
    run: () => { for (const f of queue.splice(0)) f(); },
  };
}

t.test('the decision: the virtual port key from the userdata, the parent from reg14, the datapath from metadata', async (t) => {
  // Compiled with every port at key 1 (the fixture's lookup): the userdata carries it big-endian.
  const userdata = controllerUserdata('bind_vport("vip", inport); next;', { table: 19, isSwitch: true });
  t.strictSame(userdata, hex('00000011 00000000 00000001'), 'opcode 17, then the key');
  const d = decidePacketIn({ packet: GARP, userdata, metadata: M({ metadata: 5n, reg14: 2n }), reason: 1 });
  t.same(d, { kind: 'bind_vport', opcode: ACTION_OPCODE.BIND_VPORT, binding: { dpKey: 5, vportKey: 1, parentKey: 2 } });
  const short = decidePacketIn({ packet: GARP, userdata: hex('00000011 00000000 0000'), metadata: M({ metadata: 5n, reg14: 2n }) });
  t.match(short, { kind: 'ignored', reason: 'bad_userdata' }, 'a key cut short is bad userdata');
});

t.test('the writer: one update per claim with chassis and virtual_parent; none when unchanged, not virtual or unknown', async (t) => {
  const txns: unknown[][] = [];
  const claimed: string[] = [];
  const timers = manualTimers();
  const w = new VportBindingWriter({
    sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({ count: 1 })); } },
    lookup: lookup(), timers, onClaim: (v, p) => claimed.push(`${v}<-${p}`),
  });
  t.equal(w.put({ dpKey: 5, vportKey: 9, parentKey: 1 }), 'queued');
  t.equal(w.put({ dpKey: 5, vportKey: 9, parentKey: 2 }), 'replaced', 'the latest parent wins');
  t.equal(w.put({ dpKey: 5, vportKey: 3, parentKey: 1 }), 'queued');
  t.equal(w.put({ dpKey: 5, vportKey: 77, parentKey: 1 }), 'queued');
  t.equal(w.put({ dpKey: 6, vportKey: 9, parentKey: 1 }), 'queued');
  timers.run();
  await w.flush();
  t.same(txns, [[{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', 'pb-vip']]], row: { chassis: ['uuid', US], virtual_parent: 'vm2' } }]]);
  t.same(claimed, ['vip<-vm2']);
  t.match(w.stats, { queued: 4, replaced: 1, claimed: 1, notVirtual: 1, unknownPort: 2, transactions: 1, failedTransactions: 0 });

  // Already claimed here through vm2: no write. Through vm1 (or by another chassis): claimed again.
  const again = new VportBindingWriter({ sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({ count: 1 })); } }, lookup: lookup({ 9: { chassis: US, virtualParent: 'vm2' } }), timers });
  again.put({ dpKey: 5, vportKey: 9, parentKey: 2 });
  await again.flush();
  t.equal(txns.length, 1, 'nothing written for a claim the SB has');
  t.equal(again.stats.unchanged, 1);
  again.put({ dpKey: 5, vportKey: 9, parentKey: 1 });
  await again.flush();
  t.same(txns[1], [{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', 'pb-vip']]], row: { chassis: ['uuid', US], virtual_parent: 'vm1' } }], 'the VIP moved to vm1');
  const elsewhere = new VportBindingWriter({ sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({ count: 1 })); } }, lookup: lookup({ 9: { chassis: 'other', virtualParent: 'vm2' } }), timers });
  elsewhere.put({ dpKey: 5, vportKey: 9, parentKey: 2 });
  await elsewhere.flush();
  t.equal(txns.length, 3, 'claimed back from another chassis: the GARP came from here');
  for (const x of [w, again, elsewhere]) x.close();
});

t.test('the writer: no chassis yet, a full table, a failed transaction', async (t) => {
  const timers = manualTimers();
  const errors: string[] = [];
  const early = new VportBindingWriter({ sb: { transact: async () => { throw new Error('never called'); } }, lookup: lookup({}, null), timers });
  early.put({ dpKey: 5, vportKey: 9, parentKey: 1 });
  await early.flush();
  t.equal(early.stats.noChassis, 1, 'before the Chassis row exists, nothing to claim for');
  const small = new VportBindingWriter({ sb: { transact: async () => [{ error: 'constraint violation', details: 'gone' }] }, lookup: lookup(), timers, pendingMax: 1, onError: (m) => errors.push(m) });
  t.equal(small.put({ dpKey: 5, vportKey: 9, parentKey: 1 }), 'queued');
  t.equal(small.put({ dpKey: 5, vportKey: 8, parentKey: 1 }), 'full');
  t.equal(small.put({ dpKey: 5, vportKey: 9, parentKey: 2 }), 'replaced', 'a waiting key still takes a new parent');
  await small.flush();
  t.match(small.stats, { droppedFull: 1, transactions: 1, failedTransactions: 1, claimed: 0 });
  t.match(errors, [/bind_vport claim of vip \(parent vm2\) failed: constraint violation: gone/]);
  t.equal(small.pendingN, 0, 'not retried: the next GARP claims again');
  early.close();
  small.close();
  t.throws(() => small.put({ dpKey: 5, vportKey: 9, parentKey: 1 }), /closed/);
});

t.test('Pinctrl: a bind_vport packet-in is a claim written on the next turn; without lookups it is unsupported', async (t) => {
  const txns: unknown[][] = [];
  const claims: string[] = [];
  const p = new Pinctrl({
    channel: { send: () => { throw new Error('nothing is sent back for bind_vport'); } },
    sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({ count: 1 })); } },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
    vportLookup: lookup(), onVportClaim: (v, parent) => claims.push(`${v} ${parent}`),
  });
  t.teardown(() => p.close());
  const userdata = hex('00000011 00000000 00000009');
  const out = p.handlePacketIn({ packet: GARP, userdata, metadata: M({ metadata: 5n, reg14: 1n }), reason: 1 });
  t.same(out, { kind: 'vport_claim', opcode: ACTION_OPCODE.BIND_VPORT, put: 'queued' });
  await new Promise((resolve) => setImmediate(resolve));
  await p.flushVportBindings();
  t.same(txns, [[{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', 'pb-vip']]], row: { chassis: ['uuid', US], virtual_parent: 'vm1' } }]], 'written by the timer');
  t.same(claims, ['vip vm1']);
  t.equal(p.stats.vportClaims, 1);
  t.equal(p.stats.vportBindings?.claimed, 1);

  const bare = new Pinctrl({
    channel: { send: () => undefined }, sb: { transact: async () => [] },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
  });
  t.teardown(() => bare.close());
  t.match(bare.handlePacketIn({ packet: GARP, userdata, metadata: M({ metadata: 5n, reg14: 1n }) }), { kind: 'ignored', reason: 'unsupported_opcode' });
  t.equal(bare.stats.ignored.unsupported_opcode, 1);
});
