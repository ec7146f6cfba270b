// The IGMP and MLD querier (agent/pinctrl/igmp-querier.ts): which local switches get queries
// (enabled, querier, an eth_src and an ip4_src or ip6_src that parse, each address its own query;
// not a switch that is not local), the interval (query_interval, else idle_timeout / 2), the
// queries themselves (an IGMPv3 and an MLDv2 general query, every field and checksum checked, read
// back by our own snooping parser), the packet-out (metadata, _MC_flood, MLF_LOCAL_ONLY, the
// local output table) and the schedule (at once, then every interval, IGMP and MLD together; a
// switch that goes stops; a shorter interval takes effect at once; a refused send is counted and
// does not hold back the switch's other query).

import t from 'tap';
import { LOG_REG, MLF, OFTABLE } from '../../agent/compile/tables.js';
import type { Locality, LocalDatapath } from '../../agent/flows/local-datapaths.js';
import { ChannelError } from '../../agent/openflow/channel.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import { igmpQueryPacket, IgmpQueriers, MC_FLOOD_KEY, mldQueryPacket, querierPacketOuts, querierSpecs, queryPacketOut, type QuerierSpec } from '../../agent/pinctrl/igmp-querier.js';
import { parseMcastMessage } from '../../agent/pinctrl/igmp-packet.js';
import { icmp6ChecksumOk, internetChecksum, isPacketError } from '../../agent/pinctrl/packet.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { FakeTimers } from '../helpers/fake-timers.js';

const DP = '00000000-0000-4000-8000-0000000000d1';
const OTHER = '00000000-0000-4000-8000-0000000000d2';
const FAR = '00000000-0000-4000-8000-0000000000d3';

function row(datapath: string, extra: Partial<sb.IP_Multicast> = {}): sb.IP_Multicast {
  return {
    _uuid: `${datapath.slice(0, -2)}aa`, _version: '', datapath, enabled: [true], querier: [true], eth_src: '00:00:00:00:99:01', ip4_src: '10.0.0.254', ip6_src: '',
    table_size: [2048], idle_timeout: [300], query_interval: [], query_max_resp: [1], seq_no: 0, ...extra,
  };
}

const locality: Locality = { datapaths: new Map([[DP, {} as LocalDatapath], [OTHER, {} as LocalDatapath]]), byKey: new Map() };
const datapath = (uuid: string): sb.Datapath_Binding | undefined =>
  ({ [DP]: 5, [OTHER]: 6, [FAR]: 7 } as Record<string, number>)[uuid] === undefined ? undefined
    : { _uuid: uuid, _version: '', tunnel_key: ({ [DP]: 5, [OTHER]: 6, [FAR]: 7 } as Record<string, number>)[uuid] as number, load_balancers: [], external_ids: new Map() };

t.test('which switches are queried, and how often', async (t) => {
  const specs = querierSpecs([
    row(DP),
    row(OTHER, { query_interval: [20], query_max_resp: [3], eth_src: '0A:00:00:00:99:02', ip4_src: '10.0.1.254' }),
    row(FAR),
  ], datapath, locality);
  t.same(specs.map((s) => [s.dpKey, s.intervalS, s.maxRespS, s.ethSrc]), [[5, 150, 1, '00:00:00:00:99:01'], [6, 20, 3, '0a:00:00:00:99:02']],
    'local switches only; the interval is query_interval, else idle_timeout / 2');
  for (const [what, extra] of [
    ['snooping off', { enabled: [false] }], ['querier off', { querier: [false] }], ['no eth_src', { eth_src: '' }], ['a bad eth_src', { eth_src: 'zz' }],
    ['no ip4_src', { ip4_src: '' }], ['a bad ip4_src', { ip4_src: '10.0.0' }],
  ] as const) {
    t.same(querierSpecs([row(DP, extra as Partial<sb.IP_Multicast>)], datapath, locality), [], `no querier with ${what}`);
  }
  t.same(querierSpecs([row(DP, { idle_timeout: [], query_interval: [] })], datapath, locality)[0]?.intervalS, 150, 'the default idle timeout (300 s) halved');
  const addrs = (extra: Partial<sb.IP_Multicast>): [number | undefined, bigint | undefined][] =>
    querierSpecs([row(DP, extra)], datapath, locality).map((s) => [s.ip4Src, s.ip6Src]);
  t.same(addrs({}), [[0x0a0000fe, undefined]], 'ip4_src only: IGMP only');
  t.same(addrs({ ip4_src: '', ip6_src: 'fe80::99:1' }), [[undefined, 0xfe80000000000000000000000099_0001n]], 'ip6_src only: MLD only');
  t.same(addrs({ ip6_src: 'fe80::99:1' }), [[0x0a0000fe, 0xfe80000000000000000000000099_0001n]], 'both: both');
  t.same(addrs({ ip4_src: '10.0.0', ip6_src: 'fe80::99:1' }), [[undefined, 0xfe80000000000000000000000099_0001n]], 'a bad ip4_src leaves MLD');
  t.same(addrs({ ip6_src: 'fe80::99::1' }), [[0x0a0000fe, undefined]], 'a bad ip6_src leaves IGMP');
  t.same(addrs({ ip4_src: '', ip6_src: 'fe80:99:1' }), [], 'no address that parses: no querier');
  t.same(addrs({ ip6_src: 'fe80::99:1', eth_src: 'zz' }), [], 'a bad eth_src stops both');
});

t.test('the query: an IGMPv3 general query to 224.0.0.1, and its packet-out', async (t) => {
  const spec = { ethSrc: '00:00:00:00:99:01', ip4Src: 0x0a0000fe, maxRespS: 2 };
  const p = igmpQueryPacket(spec);
  t.equal(p.subarray(0, 12).toString('hex'), '01005e000001' + '000000009901', 'from eth_src to 01:00:5e:00:00:01');
  t.equal(p.readUInt16BE(12), 0x0800);
  const ip = p.subarray(14, 34);
  t.same([ip[1], ip.readUInt16BE(6), ip[8], ip[9], ip.readUInt32BE(12), ip.readUInt32BE(16)], [0, 0x4000, 1, 2, 0x0a0000fe, 0xe0000001], 'TOS 0 (as ovn-controller leaves it), DF, TTL 1, IGMP, ip4_src to 224.0.0.1');
  t.equal(internetChecksum(ip), 0, 'the IPv4 checksum holds');
  const igmp = p.subarray(34);
  t.equal(igmp.length, 12, 'a 12-byte IGMPv3 query without sources');
  t.same([igmp[0], igmp[1], igmp.readUInt32BE(4), igmp[8], igmp[9], igmp.readUInt16BE(10)], [0x11, 20, 0, 0, 20, 0], 'type 0x11, max response and QQIC 2 s in tenths, group 0');
  t.equal(internetChecksum(igmp), 0, 'the IGMP checksum holds');
  const parsed = parseMcastMessage(p);
  t.notOk(isPacketError(parsed), 'our snooping parser reads it');
  t.match(parsed, { kind: 'query', proto: 'igmp' }, 'as a query');
  const po = queryPacketOut(5, p);
  t.equal(po.data, p);
  const localOnly = 1n << BigInt(MLF.LOCAL_ONLY);
  t.same(po.actions, [
    { kind: 'set_field', field: 'metadata', value: 5n },
    { kind: 'set_field', field: LOG_REG.OUTPORT, value: BigInt(MC_FLOOD_KEY) },
    { kind: 'set_field', field: LOG_REG.FLAGS, value: localOnly, mask: localOnly },
    { kind: 'resubmit', table: OFTABLE.LOCAL_OUTPUT, inPort: 0xfffd },
  ], 'flooded from the local output table, to this chassis\'s ports only');
});

t.test('the MLD query: an MLDv2 general query to ff02::1 behind the router alert', async (t) => {
  const src = 0xfe80000000000000000000000099_0001n;
  const p = mldQueryPacket({ ethSrc: '00:00:00:00:99:01', ip6Src: src, maxRespS: 2 });
  t.equal(p.length, 14 + 40 + 8 + 28, 'Ethernet, IPv6, an 8-byte hop-by-hop header, a 28-byte query');
  t.equal(p.subarray(0, 14).toString('hex'), '333300000000' + '000000009901' + '86dd', 'from eth_src to 33:33:00:00:00:00 (as ovn-controller addresses it), IPv6');
  const ip = p.subarray(14, 54);
  t.same([ip.readUInt32BE(0), ip.readUInt16BE(4), ip[6], ip[7]], [0x60000000, 36, 0, 1], 'version 6, traffic class and flow label 0, payload 36, hop-by-hop next, hop limit 1');
  t.equal(ip.subarray(8, 24).toString('hex'), 'fe800000000000000000000000990001', 'from ip6_src');
  t.equal(ip.subarray(24, 40).toString('hex'), 'ff020000000000000000000000000001', 'to ff02::1');
  t.equal(p.subarray(54, 62).toString('hex'), '3a00' + '05020000' + '0000', 'hop-by-hop: ICMPv6 next, 8 bytes, router alert MLD, two Pad1');
  const mld = p.subarray(62);
  t.same([mld[0], mld[1], mld.readUInt16BE(4), mld.readUInt16BE(6), mld[24], mld[25], mld.readUInt16BE(26)], [130, 0, 2000, 0, 0, 2, 0],
    'type 130, code 0, max response 2000 ms, reserved 0, S/QRV 0, QQIC 2 (seconds, not tenths), no sources');
  t.equal(mld.subarray(8, 24).toString('hex'), '0'.repeat(32), 'group :: (general)');
  t.ok(icmp6ChecksumOk(mld, src, 0xff02n << 112n | 1n), 'the ICMPv6 checksum holds over the pseudo-header');
  t.equal(mld.readUInt16BE(2), 0x77b8, 'and is the sum of its 16-bit words worked out by hand');
  const parsed = parseMcastMessage(p);
  t.notOk(isPacketError(parsed), 'our snooping parser reads it');
  t.match(parsed, { kind: 'query', proto: 'mld', fromRouter: true }, 'as a query from a router');
  t.equal(mldQueryPacket({ ethSrc: '00:00:00:00:99:01', ip6Src: src, maxRespS: 70 }).readUInt16BE(62 + 4), (70_000) & 0xffff, 'a max response past 65535 ms wraps, as ovn-controller\'s 16-bit field does');

  const both: QuerierSpec = { key: DP, dpKey: 5, ethSrc: '00:00:00:00:99:01', ip4Src: 0x0a0000fe, ip6Src: src, intervalS: 10, maxRespS: 2 };
  const outs = querierPacketOuts(both);
  t.same(outs.map((o) => o.what), ['IGMP query on datapath 5', 'MLD query on datapath 5'], 'a switch with both addresses gets IGMP, then MLD');
  t.same(outs[1]?.message, queryPacketOut(5, p), 'the MLD query goes out as the IGMP one does');
  t.same(querierPacketOuts({ ...both, ip4Src: undefined }).map((o) => o.what), ['MLD query on datapath 5'], 'MLD only');
  t.same(querierPacketOuts({ ...both, ip6Src: undefined }).map((o) => o.what), ['IGMP query on datapath 5'], 'IGMP only');
});

t.test('the schedule: at once, every interval, stopped when the switch goes', async (t) => {
  const timers = new FakeTimers();
  const sent: { at: number; dp: bigint; ethType: number }[] = [];
  let refuse = false;
  const problems: string[] = [];
  const q = new IgmpQueriers({
    channel: {
      send: (m: OfMessage): void => {
        if (refuse) throw new ChannelError('overloaded', 'full');
        if (m.kind === 'packet_out') sent.push({ at: timers.now(), dp: (m.actions[0] as { value: bigint }).value, ethType: m.data.readUInt16BE(12) });
      },
    },
    timers, onProblem: (m) => problems.push(m),
  });
  const t0 = timers.now();
  const a: QuerierSpec = { key: DP, dpKey: 5, ethSrc: '00:00:00:00:99:01', ip4Src: 0x0a0000fe, ip6Src: undefined, intervalS: 10, maxRespS: 1 };
  const b: QuerierSpec = { ...a, key: OTHER, dpKey: 6, intervalS: 25, ip6Src: 0xfe80n << 112n | 1n };
  q.sync([a, b]);
  await timers.advance(60_000);
  t.same(sent.filter((s) => s.dp === 5n).map((s) => [s.at - t0, s.ethType]), [0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000].map((at) => [at, 0x0800]), 'every 10 s from the start, IGMP only');
  t.same(sent.filter((s) => s.dp === 6n).map((s) => [s.at - t0, s.ethType]), [0, 25_000, 50_000].flatMap((at) => [[at, 0x0800], [at, 0x86dd]]), 'every 25 s, IGMP and MLD together');
  sent.length = 0;
  q.sync([{ ...b, intervalS: 5, ip4Src: undefined }]);
  await timers.advance(12_000);
  t.same(sent.map((s) => [Number(s.dp), s.at - t0, s.ethType]), [[6, 65_000, 0x86dd], [6, 70_000, 0x86dd]], 'the first switch stopped; the second\'s shorter interval at once, MLD only now');
  refuse = true;
  await timers.advance(5_000);
  t.equal(q.stats.notSent, 1, 'a query the channel refused is counted');
  t.match(problems, [/MLD query on datapath 6 not sent/]);
  q.close();
});

t.test('a refused IGMP query does not keep the switch\'s MLD query back', async (t) => {
  const timers = new FakeTimers();
  const sent: number[] = [];
  const q = new IgmpQueriers({
    channel: {
      send: (m: OfMessage): void => {
        if (m.kind !== 'packet_out') return;
        if (m.data.readUInt16BE(12) === 0x0800) throw new ChannelError('overloaded', 'full');
        sent.push(m.data.readUInt16BE(12));
      },
    },
    timers,
  });
  q.sync([{ key: DP, dpKey: 5, ethSrc: '00:00:00:00:99:01', ip4Src: 0x0a0000fe, ip6Src: 0xfe80n << 112n | 1n, intervalS: 10, maxRespS: 1 }]);
  await timers.advance(10_000);
  t.same(sent, [0x86dd, 0x86dd], 'the MLD query went out each time');
  t.same(q.stats, { sent: 2, notSent: 2 }, 'the IGMP ones are counted as not sent');
  q.close();
});
