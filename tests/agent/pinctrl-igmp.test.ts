// Goal: IGMP/MLD snooping as ovn-controller 23.03's pinctrl and OVS's mcast-snooping.c do it —
// messages read (checksums checked, cut packets refused without throwing), groups learned, left
// and aged, the table bounded, routers learned from queries, the message sent on to
// _MC_mrouter_flood or _MC_flood_l2, and the SB IGMP_Group rows this chassis should have.
// Method: packets built byte by byte here, a fake SB lookup and transact that records, a clock
// moved by hand.

import t from 'tap';
import { ACTION_OPCODE, OFTABLE_OUTPUT_INIT } from '../../agent/compile/tables.js';
import type { MaskedValue } from '../../agent/openflow/types.js';
import { decidePacketIn } from '../../agent/pinctrl/handlers.js';
import { parseMcastMessage, type McastMessage } from '../../agent/pinctrl/igmp-packet.js';
import { McastGroupTable } from '../../agent/pinctrl/igmp-table.js';
import {
  IgmpSnooping, igmpSyncOps, MC_FLOOD_L2_KEY, MC_MROUTER_FLOOD_KEY, Pinctrl, type IgmpGroupRow, type IgmpLookup, type McastSnoopConfig,
} from '../../agent/pinctrl/index.js';
import type { WriterTimers } from '../../agent/pinctrl/batch-writer.js';
import {
  ETH_TYPE, IP_PROTO, buildEthernet, buildIcmp6, buildIpv6, internetChecksum, isPacketError, parseIpv4, type Ipv6,
} from '../../agent/pinctrl/packet.js';
import { controllerUserdata, full, hex } from './pinctrl-fixtures.js';

const ip4 = (s: string): number => parseIpv4(s) as number;
const ip6 = (s: string): Ipv6 => {
  const [head = '', tail = ''] = s.split('::');
  const h = head === '' ? [] : head.split(':');
  const tl = tail === '' ? [] : tail.split(':');
  const groups = s.includes('::') ? [...h, ...Array<string>(8 - h.length - tl.length).fill('0'), ...tl] : h;
  return groups.reduce((v, g) => (v << 16n) | BigInt(parseInt(g, 16)), 0n);
};

/** An IGMP message in IPv4 with the router alert option (IHL 6), as Linux sends it. */
function igmpFrame(igmp: Buffer, opts: { src?: string; dst?: string; fixSum?: boolean } = {}): Buffer {
  const body = Buffer.from(igmp);
  if (opts.fixSum !== false) {
    body.writeUInt16BE(0, 2);
    body.writeUInt16BE(internetChecksum(body), 2);
  }
  const h = Buffer.alloc(24);
  h[0] = 0x46;
  h[1] = 0xc0;
  h.writeUInt16BE(24 + body.length, 2);
  h[8] = 1;
  h[9] = 2;
  h.writeUInt32BE(ip4(opts.src ?? '10.0.0.1'), 12);
  h.writeUInt32BE(ip4(opts.dst ?? '224.0.0.22'), 16);
  h.writeUInt32BE(0x94040000, 20);
  h.writeUInt16BE(internetChecksum(h), 10);
  return buildEthernet({ dst: '01:00:5e:00:00:16', src: '0a:00:00:00:00:01', ethType: ETH_TYPE.IPV4 }, Buffer.concat([h, body]));
}

/** IGMPv1/v2 message: type, max resp, checksum, group. */
function igmpV2(type: number, group: string): Buffer {
  const b = Buffer.alloc(8);
  b[0] = type;
  b.writeUInt32BE(ip4(group), 4);
  return b;
}

/** An IGMPv3 report with records [type, group, sources]. */
function igmpV3(records: readonly [number, string, number][]): Buffer {
  const parts = records.map(([type, group, n]) => {
    const r = Buffer.alloc(8 + 4 * n);
    r[0] = type;
    r.writeUInt16BE(n, 2);
    r.writeUInt32BE(ip4(group), 4);
    for (let i = 0; i < n; i++) r.writeUInt32BE(ip4('10.9.9.9') + i, 8 + 4 * i);
    return r;
  });
  const h = Buffer.alloc(8);
  h[0] = 0x22;
  h.writeUInt16BE(records.length, 6);
  return Buffer.concat([h, ...parts]);
}

/** An MLD message behind a hop-by-hop header with the router alert, as Linux sends it. */
function mldFrame(type: number, body: Buffer, src = 'fe80::1', dst = 'ff02::16', breakSum = false): Buffer {
  const icmp = buildIcmp6({ type, code: 0 }, body, ip6(src), ip6(dst));
  if (breakSum) icmp[2] = (icmp[2] as number) ^ 0xff;
  const hop = hex('3a00 0502 0000 0100');
  const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: 0, hopLimit: 1, src: ip6(src), dst: ip6(dst) }, Buffer.concat([hop, icmp]));
  return buildEthernet({ dst: '33:33:00:00:00:16', src: '0a:00:00:00:00:01', ethType: ETH_TYPE.IPV6 }, ip);
}

/** The MLD body after type, code and checksum: max delay / reserved, then the group (v1). */
function mldV1Body(group: string): Buffer {
  const b = Buffer.alloc(20);
  let v = ip6(group);
  for (let i = 19; i >= 4; i--) {
    b[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return b;
}

function mldV2Body(records: readonly [number, string][]): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt16BE(records.length, 2);
  const rs = records.map(([type, group]) => {
    const r = Buffer.alloc(20);
    r[0] = type;
    mldV1Body(group).copy(r, 4, 4);
    return r;
  });
  return Buffer.concat([h, ...rs]);
}

const ok = (x: ReturnType<typeof parseMcastMessage>): McastMessage => {
  if (isPacketError(x)) throw new Error(x.message);
  return x;
};

t.test('IGMP messages: v1/v2 reports join, leave leaves, a query names a router, v3 records as OVS reads them', async (t) => {
  t.same(ok(parseMcastMessage(igmpFrame(igmpV2(0x12, '239.1.1.1')))), { kind: 'report', proto: 'igmp', type: 0x12, records: [{ group: '239.1.1.1', join: true }] });
  t.same(ok(parseMcastMessage(igmpFrame(igmpV2(0x16, '239.1.1.2')))), { kind: 'report', proto: 'igmp', type: 0x16, records: [{ group: '239.1.1.2', join: true }] });
  t.same(ok(parseMcastMessage(igmpFrame(igmpV2(0x17, '239.1.1.2')))), { kind: 'report', proto: 'igmp', type: 0x17, records: [{ group: '239.1.1.2', join: false }] });
  t.same(ok(parseMcastMessage(igmpFrame(igmpV2(0x11, '0.0.0.0')))), { kind: 'query', proto: 'igmp', fromRouter: true });
  t.same(ok(parseMcastMessage(igmpFrame(igmpV2(0x13, '0.0.0.0')))), { kind: 'other', proto: 'igmp', type: 0x13 });
  t.same(ok(parseMcastMessage(igmpFrame(igmpV2(0x16, '10.1.1.1')))), { kind: 'report', proto: 'igmp', type: 0x16, records: [] }, 'a unicast group is not learned');
  const v3 = ok(parseMcastMessage(igmpFrame(igmpV3([
    [2, '239.0.0.1', 0], // MODE_IS_EXCLUDE {}: join
    [3, '239.0.0.2', 0], // CHANGE_TO_INCLUDE {}: leave
    [1, '239.0.0.3', 0], // MODE_IS_INCLUDE {}: leave
    [1, '239.0.0.4', 2], // MODE_IS_INCLUDE {S1, S2}: join
    [9, '239.0.0.5', 1], // unknown type: skipped, its sources stepped over
    [5, '239.0.0.6', 1], // ALLOW_NEW_SOURCES: join
  ]))));
  t.same(v3, {
    kind: 'report', proto: 'igmp', type: 0x22,
    records: [{ group: '239.0.0.1', join: true }, { group: '239.0.0.2', join: false }, { group: '239.0.0.3', join: false }, { group: '239.0.0.4', join: true }, { group: '239.0.0.6', join: true }],
  });
});

t.test('IGMP: a bad checksum is refused; every cut of a report is refused or read short, never thrown', async (t) => {
  const bad = igmpV2(0x16, '239.1.1.1');
  bad.writeUInt16BE(0x1234, 2);
  t.match(parseMcastMessage(igmpFrame(bad, { fixSum: false })), { error: 'malformed', message: /checksum/ });
  const frame = igmpFrame(igmpV3([[2, '239.0.0.1', 0], [2, '239.0.0.2', 3]]));
  for (let n = 0; n < frame.length; n++) {
    const cut = Buffer.from(frame.subarray(0, n));
    // Keep the IP total length honest for the cut, so the IGMP layer itself is what is short.
    if (n >= 38) {
      cut.writeUInt16BE(n - 14, 16);
      cut.writeUInt16BE(0, 24);
      cut.writeUInt16BE(internetChecksum(cut.subarray(14, 38)), 24);
    }
    t.doesNotThrow(() => parseMcastMessage(cut), `cut at ${n}`);
    const r = parseMcastMessage(cut);
    if (!isPacketError(r)) t.fail(`cut at ${n} parsed: its checksum cannot hold`);
  }
});

t.test('MLD: v1 report and done, v2 records, queries from a router but not from ::, checksum over the pseudo-header', async (t) => {
  t.same(ok(parseMcastMessage(mldFrame(131, mldV1Body('ff05::1:3')))), { kind: 'report', proto: 'mld', type: 131, records: [{ group: 'ff05::1:3', join: true }] });
  t.same(ok(parseMcastMessage(mldFrame(132, mldV1Body('ff05::1:3')))), { kind: 'report', proto: 'mld', type: 132, records: [{ group: 'ff05::1:3', join: false }] });
  t.same(ok(parseMcastMessage(mldFrame(143, mldV2Body([[4, 'ff0e::101'], [3, 'ff0e::102']]), 'fe80::1', 'ff02::16'))), {
    kind: 'report', proto: 'mld', type: 143, records: [{ group: 'ff0e::101', join: true }, { group: 'ff0e::102', join: false }],
  });
  t.same(ok(parseMcastMessage(mldFrame(130, mldV1Body('::'), 'fe80::99', 'ff02::1'))), { kind: 'query', proto: 'mld', fromRouter: true });
  t.same(ok(parseMcastMessage(mldFrame(130, mldV1Body('::'), '::', 'ff02::1'))), { kind: 'query', proto: 'mld', fromRouter: false });
  t.match(parseMcastMessage(mldFrame(131, mldV1Body('ff05::1:3'), 'fe80::1', 'ff02::16', true)), { error: 'malformed', message: /MLD checksum/ });
  const frame = mldFrame(131, mldV1Body('ff05::1:3'));
  for (let n = 0; n < frame.length; n++) t.ok(isPacketError(parseMcastMessage(frame.subarray(0, n))), `cut at ${n} refused`);
  // Without the hop-by-hop header, straight ICMPv6.
  const icmp = buildIcmp6({ type: 131, code: 0 }, mldV1Body('ff05::7'), ip6('fe80::1'), ip6('ff05::7'));
  const plain = buildEthernet({ dst: '33:33:00:00:00:07', src: '0a:00:00:00:00:01', ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 1, src: ip6('fe80::1'), dst: ip6('ff05::7') }, icmp));
  t.same(ok(parseMcastMessage(plain)), { kind: 'report', proto: 'mld', type: 131, records: [{ group: 'ff05::7', join: true }] });
});

const M = (o: Record<string, bigint>): Map<string, MaskedValue> =>
  new Map(Object.entries(o).map(([k, v]) => [k, { value: v, mask: k === 'metadata' ? full(64) : full(32) }]));

t.test('the decision: datapath from metadata, inport from reg14, a bad message is a bad packet', async (t) => {
  const userdata = controllerUserdata('igmp;', { table: 11, isSwitch: true });
  t.strictSame(userdata, hex('00000010 00000000'));
  const d = decidePacketIn({ packet: igmpFrame(igmpV2(0x16, '239.1.1.1')), userdata, metadata: M({ metadata: 5n, reg14: 3n }), reason: 1 });
  t.match(d, { kind: 'igmp', opcode: ACTION_OPCODE.IGMP, dpKey: 5, inportKey: 3, message: { kind: 'report', records: [{ group: '239.1.1.1', join: true }] } });
  const bad = igmpV2(0x16, '239.1.1.1');
  t.match(decidePacketIn({ packet: igmpFrame(bad, { fixSum: false }), userdata, metadata: M({ metadata: 5n, reg14: 3n }) }), { kind: 'ignored', reason: 'bad_packet' });
});

t.test('the group table: join, leave, expiry by the clock, routers, and the table_size bound', async (t) => {
  const g = new McastGroupTable(10, 20);
  t.ok(g.join('239.1.1.1', 1, 0), 'a new group');
  t.ok(g.join('239.1.1.1', 2, 1000), 'a new member');
  t.notOk(g.join('239.1.1.1', 1, 5000), 'a refresh is no change');
  t.same([...g.groupMembers()], [['239.1.1.1', [1, 2]]]);
  t.equal(g.nextExpiryMs(), 21_000, 'port 2 expires first: 1 s + 20 s');
  t.notOk(g.expire(20_999));
  t.ok(g.expire(21_000), 'port 2 aged out');
  t.same([...g.groupMembers()], [['239.1.1.1', [1]]]);
  t.ok(g.expire(25_000), 'port 1, refreshed at 5 s, ages out at 25 s');
  t.equal(g.groupsN, 0, 'a group without members is gone');
  g.join('239.1.1.1', 1, 30_000);
  t.ok(g.leave('239.1.1.1', 1));
  t.notOk(g.leave('239.1.1.1', 1), 'leaving twice');
  t.equal(g.groupsN, 0);
  // Routers: learned from queries, kept 180 s; a router port joins nothing.
  t.ok(g.addMrouter(7, 40_000));
  t.notOk(g.addMrouter(7, 41_000));
  t.notOk(g.join('239.2.2.2', 7, 41_000), 'a router port does not join');
  t.same(g.mrouterPorts(), [7]);
  t.notOk(g.expire(220_999));
  t.ok(g.expire(221_000));
  t.same(g.mrouterPorts(), []);
  // The bound: table_size 10 (OVS's least); an 11th group pushes out the least recently used.
  const b = new McastGroupTable(3, 300);
  for (let i = 0; i < 10; i++) b.join(`239.0.0.${i}`, 1, i);
  b.join('239.0.0.0', 2, 100);
  b.join('239.0.0.10', 1, 200);
  t.equal(b.groupsN, 10, 'table_size 3 is held to 10');
  t.same([...b.groupMembers().keys()].includes('239.0.0.1'), false, '239.0.0.1 was the least recently used');
  t.ok(b.groupMembers().has('239.0.0.0'), 'a join made 239.0.0.0 recently used');
  // idle_timeout is held to 15 s at the least, and a change moves the expiries.
  const c = new McastGroupTable(100, 1);
  c.join('239.9.9.9', 1, 0);
  t.equal(c.nextExpiryMs(), 15_000);
  c.configure(100, 60);
  t.equal(c.nextExpiryMs(), 60_000);
});

/** A fake SB view: datapath 5 (uuid dp-5) with ports 1..4 (pb-N), and the IGMP_Group rows. */
function fakeLookup(): IgmpLookup & { rows: (IgmpGroupRow & { dp: string; chassis: string })[]; config: McastSnoopConfig | undefined } {
  const l = {
    rows: [] as (IgmpGroupRow & { dp: string; chassis: string })[],
    config: { enabled: true, tableSize: 2048, idleTimeoutS: 300, seqNo: 0 } as McastSnoopConfig | undefined,
    chassisUuid: () => 'ch-us',
    ipMulticast: (dp: number) => (dp === 5 ? l.config : undefined),
    datapathUuid: (dp: number) => (dp === 5 ? 'dp-5' : undefined),
    portUuid: (dp: number, port: number) => (dp === 5 && port >= 1 && port <= 4 ? `pb-${port}` : undefined),
    igmpGroups: (dp: string, ch: string) => l.rows.filter((r) => r.dp === dp && r.chassis === ch),
    igmpGroupDatapaths: (ch: string) => (l.rows.some((r) => r.chassis === ch && r.dp === 'dp-5') ? [5] : []),
  };
  return l;
}

t.test('the SB ops: inserts, port updates, deletes, nothing when the SB shows it already', async (t) => {
  const l = fakeLookup();
  const desired = new Map<string, number[]>([['239.1.1.1', [1, 2]], ['ff0e::101', [3]], ['mrouters', [4]], ['239.9.9.9', [99]]]);
  t.same(igmpSyncOps(5, desired, l, 'ch-us'), [
    { op: 'insert', table: 'IGMP_Group', row: { address: '239.1.1.1', datapath: ['uuid', 'dp-5'], chassis: ['uuid', 'ch-us'], ports: ['set', [['uuid', 'pb-1'], ['uuid', 'pb-2']]] } },
    { op: 'insert', table: 'IGMP_Group', row: { address: 'ff0e::101', datapath: ['uuid', 'dp-5'], chassis: ['uuid', 'ch-us'], ports: ['set', [['uuid', 'pb-3']]] } },
    { op: 'insert', table: 'IGMP_Group', row: { address: 'mrouters', datapath: ['uuid', 'dp-5'], chassis: ['uuid', 'ch-us'], ports: ['set', [['uuid', 'pb-4']]] } },
  ], 'a group of ports the SB does not know is not written');
  l.rows.push(
    { uuid: 'g1', address: '239.1.1.1', ports: ['pb-2', 'pb-1'], dp: 'dp-5', chassis: 'ch-us' },
    { uuid: 'g2', address: 'ff0e::101', ports: ['pb-1'], dp: 'dp-5', chassis: 'ch-us' },
    { uuid: 'g3', address: '239.7.7.7', ports: ['pb-1'], dp: 'dp-5', chassis: 'ch-us' },
    { uuid: 'g4', address: '239.7.7.7', ports: ['pb-1'], dp: 'dp-5', chassis: 'ch-other' },
    { uuid: 'g5', address: 'mrouters', ports: ['pb-4'], dp: 'dp-5', chassis: 'ch-us' },
  );
  t.same(igmpSyncOps(5, desired, l, 'ch-us'), [
    { op: 'delete', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g3']]] },
    { op: 'update', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g2']]], row: { ports: ['set', [['uuid', 'pb-3']]] } },
  ], 'another chassis\'s row is not ours to touch; same ports in another order are no change');
  l.rows.splice(2, 1);
  l.rows[1] = { ...(l.rows[1] as IgmpGroupRow & { dp: string; chassis: string }), ports: ['pb-3'] };
  t.same(igmpSyncOps(5, desired, l, 'ch-us'), [], 'the SB shows it: nothing to write');
  t.same(igmpSyncOps(5, undefined, l, 'ch-us').map((o) => (o as { where: unknown }).where), [
    [['_uuid', '==', ['uuid', 'g1']]], [['_uuid', '==', ['uuid', 'g2']]], [['_uuid', '==', ['uuid', 'g5']]],
  ], 'no table here: every row of ours goes');
  t.same(igmpSyncOps(6, desired, l, 'ch-us'), [], 'a datapath the SB view does not know');
});

/** Timers on a clock moved by hand; advance() runs what is due, in order, settling each. */
function clockTimers(): WriterTimers & { advance(ms: number): Promise<void>; nowMs: number } {
  let seq = 0;
  const pending = new Map<number, { at: number; f: () => void }>();
  const c = {
    nowMs: 0,
    now: () => c.nowMs,
    setTimeout: (f: () => void, ms: number) => { pending.set(++seq, { at: c.nowMs + ms, f }); return seq; },
    clearTimeout: (h: unknown) => { pending.delete(h as number); },
    async advance(ms: number): Promise<void> {
      const end = c.nowMs + ms;
      for (;;) {
        const due = [...pending.entries()].filter(([, p]) => p.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (due === undefined) break;
        pending.delete(due[0]);
        c.nowMs = Math.max(c.nowMs, due[1].at);
        due[1].f();
        // Let what the callback started (a transaction) settle, as the event loop would.
        await new Promise((r) => setImmediate(r));
      }
      c.nowMs = end;
    },
  };
  return c;
}

const asReport = (records: { group: string; join: boolean }[]): McastMessage => ({ kind: 'report', proto: 'igmp', type: 0x22, records });

t.test('the snooping: a join is written, a leave deletes, idle members age out, disabling flushes the rows', async (t) => {
  const l = fakeLookup();
  const timers = clockTimers();
  const txns: unknown[][] = [];
  const s = new IgmpSnooping({ sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({})); } }, lookup: l, timers, limits: { recheckMs: 5000 } });
  t.teardown(() => s.close());
  const out = s.handle(5, 1, asReport([{ group: '239.1.1.1', join: true }]), Buffer.from('x'));
  t.match(out, { kind: 'snooped', changed: true, forward: { kind: 'packet_out' } });
  await s.flush();
  t.same(txns, [[{ op: 'insert', table: 'IGMP_Group', row: { address: '239.1.1.1', datapath: ['uuid', 'dp-5'], chassis: ['uuid', 'ch-us'], ports: ['set', [['uuid', 'pb-1']]] } }]]);
  l.rows.push({ uuid: 'g1', address: '239.1.1.1', ports: ['pb-1'], dp: 'dp-5', chassis: 'ch-us' });
  // A refresh changes nothing in the SB; a recheck finds nothing to write.
  t.match(s.handle(5, 1, asReport([{ group: '239.1.1.1', join: true }]), Buffer.from('x')), { changed: false });
  await timers.advance(5000);
  await s.flush();
  t.equal(txns.length, 1, 'no transaction when the SB shows the table');
  t.ok(s.stats.unchanged >= 1);
  // A second member, then a query makes port 4 a router.
  s.handle(5, 2, asReport([{ group: '239.1.1.1', join: true }]), Buffer.from('x'));
  const q = s.handle(5, 4, { kind: 'query', proto: 'igmp', fromRouter: true }, Buffer.from('q'));
  t.match(q, { kind: 'snooped', changed: true, forward: { kind: 'packet_out' } });
  await s.flush();
  t.same(txns[1], [
    { op: 'update', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g1']]], row: { ports: ['set', [['uuid', 'pb-1'], ['uuid', 'pb-2']]] } },
    { op: 'insert', table: 'IGMP_Group', row: { address: 'mrouters', datapath: ['uuid', 'dp-5'], chassis: ['uuid', 'ch-us'], ports: ['set', [['uuid', 'pb-4']]] } },
  ]);
  l.rows[0] = { uuid: 'g1', address: '239.1.1.1', ports: ['pb-1', 'pb-2'], dp: 'dp-5', chassis: 'ch-us' };
  l.rows.push({ uuid: 'g2', address: 'mrouters', ports: ['pb-4'], dp: 'dp-5', chassis: 'ch-us' });
  // Port 2 leaves (an IGMPv3 CHANGE_TO_INCLUDE {}).
  t.match(s.handle(5, 2, asReport([{ group: '239.1.1.1', join: false }]), Buffer.from('x')), { changed: true });
  await s.flush();
  t.same(txns[2], [{ op: 'update', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g1']]], row: { ports: ['set', [['uuid', 'pb-1']]] } }]);
  l.rows[0] = { uuid: 'g1', address: '239.1.1.1', ports: ['pb-1'], dp: 'dp-5', chassis: 'ch-us' };
  // The router, heard at 5 s, ages out at 185 s; port 1, last heard at 0 s, at 300 s. (The fake
  // SB view does not drop deleted rows: every recheck deletes the mrouters row again.)
  await timers.advance(300_000 - timers.nowMs);
  await s.flush();
  t.same(s.groupsOf(5), new Map(), 'aged out');
  t.same(s.mroutersOf(5), []);
  t.same(txns[3], [{ op: 'delete', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g2']]] }], 'the mrouters row when the router aged out (185 s)');
  t.same(txns.at(-1)?.[0], { op: 'delete', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g1']]] }, 'the group at 300 s');
  t.equal(txns.filter((x) => x.length > 0).length, txns.length, 'no empty transaction');
  l.rows.splice(0);
  // A router again, then snooping turned off: the table is dropped, the row deleted, messages dropped.
  s.handle(5, 4, { kind: 'query', proto: 'igmp', fromRouter: true }, Buffer.from('q'));
  await s.flush();
  l.rows.push({ uuid: 'g3', address: 'mrouters', ports: ['pb-4'], dp: 'dp-5', chassis: 'ch-us' });
  l.config = { enabled: false, tableSize: 2048, idleTimeoutS: 300, seqNo: 0 };
  await timers.advance(5000);
  await s.flush();
  t.same(txns.at(-1), [{ op: 'delete', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', 'g3']]] }]);
  t.equal(s.datapathsN, 0);
  t.same(s.handle(5, 1, asReport([{ group: '239.1.1.1', join: true }]), Buffer.from('x')), { kind: 'not_snooping', dpKey: 5 });
  t.equal(s.stats.notSnooping, 1);
});

t.test('the snooping: a new seq_no flushes the table; a failed write is retried', async (t) => {
  const l = fakeLookup();
  const timers = clockTimers();
  const txns: unknown[][] = [];
  let fail = true;
  const problems: string[] = [];
  const s = new IgmpSnooping({
    sb: { transact: async (ops) => { txns.push([...ops]); return fail ? [{ error: 'constraint violation' }] : ops.map(() => ({})); } },
    lookup: l, timers, onProblem: (m) => problems.push(m), limits: { retryDelayMs: 1000 },
  });
  t.teardown(() => s.close());
  s.handle(5, 1, asReport([{ group: '239.1.1.1', join: true }]), Buffer.from('x'));
  await s.flush();
  t.equal(txns.length, 1);
  t.match(problems, [/IGMP_Group write for datapaths 5 failed: constraint violation/]);
  fail = false;
  await timers.advance(1000);
  await s.flush();
  t.equal(txns.length, 2, 'retried after retryDelayMs');
  t.same(txns[0], txns[1]);
  l.config = { enabled: true, tableSize: 2048, idleTimeoutS: 300, seqNo: 1 };
  s.handle(5, 2, asReport([{ group: '239.2.2.2', join: true }]), Buffer.from('x'));
  t.same(s.groupsOf(5), new Map([['239.2.2.2', [2]]]), 'the old groups went with the new seq_no');
});

t.test('Pinctrl: an igmp packet-in is snooped and sent on into the output stage with datapath, inport and outport set', async (t) => {
  const l = fakeLookup();
  const sent: unknown[] = [];
  const txns: unknown[][] = [];
  const timers = clockTimers();
  const p = new Pinctrl({
    channel: { send: (m) => { sent.push(m); } },
    sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({})); } },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
    igmpLookup: l, timers,
  });
  t.teardown(() => p.close());
  const userdata = controllerUserdata('igmp;', { table: 11, isSwitch: true });
  const report = igmpFrame(igmpV2(0x16, '239.1.1.1'));
  const r = p.handlePacketIn({ packet: report, userdata, metadata: M({ metadata: 5n, reg14: 3n }), reason: 1 });
  t.match(r, { kind: 'snooped', opcode: ACTION_OPCODE.IGMP, sent: true, outcome: { changed: true } });
  t.same(sent, [{
    kind: 'packet_out', bufferId: 0xffffffff, inPort: 0xfffffffd, data: report,
    actions: [
      { kind: 'set_field', field: 'metadata', value: 5n },
      { kind: 'set_field', field: 'reg14', value: 3n },
      { kind: 'set_field', field: 'reg15', value: BigInt(MC_MROUTER_FLOOD_KEY) },
      { kind: 'resubmit', table: OFTABLE_OUTPUT_INIT, inPort: 0xfffd },
    ],
  }]);
  t.equal(MC_MROUTER_FLOOD_KEY, 32770);
  const query = igmpFrame(igmpV2(0x11, '0.0.0.0'), { dst: '224.0.0.1' });
  p.handlePacketIn({ packet: query, userdata, metadata: M({ metadata: 5n, reg14: 4n }), reason: 1 });
  t.match(sent[1], { actions: [{ value: 5n }, { value: 4n }, { field: 'reg15', value: BigInt(MC_FLOOD_L2_KEY) }, { kind: 'resubmit' }] });
  t.equal(MC_FLOOD_L2_KEY, 32772);
  await p.igmp?.flush();
  t.same(txns.flat().map((o) => (o as { row: { address: string } }).row.address), ['239.1.1.1', 'mrouters']);
  t.match(p.stats.igmp, { snooped: 2, joins: 1, queries: 1 });
  t.equal(p.stats.packetOuts, 2);
  // Without an IGMP lookup the action stays unsupported.
  const bare = new Pinctrl({ channel: { send: () => undefined }, sb: { transact: async () => [] }, lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined }, timers });
  t.teardown(() => bare.close());
  t.match(bare.handlePacketIn({ packet: report, userdata, metadata: M({ metadata: 5n, reg14: 3n }) }), { kind: 'ignored', reason: 'unsupported_opcode' });
});
