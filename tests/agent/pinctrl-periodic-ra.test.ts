// Router advertisements sent unasked: which bindings get them (periodicRaSpecs), the packet (an
// ICMPv6 Router Advertisement to all nodes from the router port's link-local address, with the
// options in OVN's order and a good checksum), the packet-out that injects it into the peer switch
// port for local ports only, and the schedule (min_interval plus a random part of the rest,
// restarted when the intervals change, stopped when the binding goes).

import t from 'tap';
import { PeriodicRaInputs, periodicRaPacket, periodicRaPacketOut, periodicRaSpecs, PeriodicRas } from '../../agent/pinctrl/periodic-ra.js';
import { icmp6ChecksumOk, isPacketError, parseFrame } from '../../agent/pinctrl/packet.js';
import { ChannelError } from '../../agent/openflow/channel.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { FakeTimers } from '../helpers/fake-timers.js';

const raOptions = (over: Record<string, string> = {}): Map<string, string> => new Map(Object.entries({
  peer: 'sw0-lr0', ipv6_ra_send_periodic: 'true', ipv6_ra_address_mode: 'slaac', ipv6_ra_max_interval: '20', ipv6_ra_min_interval: '10',
  ipv6_ra_mtu: '1400', ipv6_ra_prefixes: 'fd00:1::/64 fd00:2::/48', ipv6_ra_src_addr: 'fe80::200:ff:fe00:ff01', ipv6_ra_src_eth: '00:00:00:00:ff:01',
  ipv6_ra_prf: 'HIGH', ipv6_ra_rdnss: 'fd00:1::53', ipv6_ra_dnssl: 'ovn.org', ...over,
}));

function sbOf(pbs: Partial<sb.Port_Binding>[]): Parameters<typeof periodicRaSpecs>[0] {
  const rows = new Map(pbs.map((p, i) => [`pb${i}`, { _uuid: `pb${i}`, _version: 'v', options: new Map(), datapath: 'dp-sw', tunnel_key: i + 1, ...p } as unknown as Row]));
  return {
    table: (name) => (name === 'Port_Binding' ? rows : new Map()),
    portByName: (name) => [...rows.values()].find((r) => r.logical_port === name) as unknown as sb.Port_Binding | undefined,
    datapath: (uuid) => (uuid === 'dp-sw' ? ({ tunnel_key: 7 } as sb.Datapath_Binding) : undefined),
  };
}

t.test('the advertisement', async (t) => {
  const packet = periodicRaPacket(raOptions());
  if (typeof packet === 'string') throw new Error(packet);
  const f = parseFrame(packet);
  if (isPacketError(f)) throw new Error(f.message);
  t.same([f.eth.dst, f.eth.src], ['33:33:00:00:00:01', '00:00:00:00:ff:01'], 'to all nodes, from the router port\'s MAC');
  const l4 = packet.subarray(54);
  t.equal(l4[0], 134, 'a Router Advertisement');
  t.same([l4[4], l4[5], l4.readUInt16BE(6)], [255, 0x08, 0xffff], 'hop limit 255, preference high, router lifetime 0xffff');
  t.ok(f.ipv6 !== undefined && icmp6ChecksumOk(l4, f.ipv6.src, f.ipv6.dst), 'the ICMPv6 checksum is good');
  t.equal(packet.readUInt16BE(18), l4.length, 'the IPv6 payload length is the message\'s');
  // Options after the 16-byte header: SLLA (8), MTU (8), two prefixes (32 each), RDNSS (24), DNSSL (16).
  const types: number[] = [];
  for (let at = 16; at < l4.length; at += (l4[at + 1] as number) * 8) types.push(l4[at] as number);
  t.same(types, [1, 5, 3, 3, 25, 31], 'source link-layer address, MTU, the prefixes, DNS server and search list, in OVN\'s order');
  t.same([l4[34], l4[35], l4[66], l4[67]], [64, 0xc0, 48, 0xc0], 'each prefix with its length, on-link and autonomous (SLAAC)');
  const stateful = periodicRaPacket(raOptions({ ipv6_ra_address_mode: 'dhcpv6_stateful', ipv6_ra_prf: 'MEDIUM' }));
  t.equal(typeof stateful === 'string' ? -1 : stateful[54 + 5], 0x80, 'stateful DHCPv6: the managed flag, medium preference');
  for (const [over, why] of [
    [{ ipv6_ra_address_mode: 'bogus' }, 'invalid address mode bogus'],
    [{ ipv6_ra_src_addr: 'nope' }, 'invalid IP source nope'],
    [{ ipv6_ra_prefixes: 'fd00::/64 oops' }, 'invalid IPv6 prefixes: fd00::/64 oops'],
    [{ ipv6_ra_rdnss: '10.0.0.1' }, 'invalid RDNSS source 10.0.0.1'],
  ] as const) t.equal(periodicRaPacket(raOptions(over)), why, why);
});

t.test('which bindings advertise, and the packet-out', async (t) => {
  const s = sbOf([
    { logical_port: 'lr0-sw0', datapath: 'dp-lr', options: raOptions() },
    { logical_port: 'sw0-lr0', options: new Map([['peer', 'lr0-sw0']]) },
    { logical_port: 'lr0-nopeer', datapath: 'dp-lr', options: raOptions({ peer: 'ghost' }) },
    { logical_port: 'lr0-off', datapath: 'dp-lr', options: raOptions({ ipv6_ra_send_periodic: 'false' }) },
    { logical_port: 'lr0-bad', datapath: 'dp-lr', options: raOptions({ ipv6_ra_src_eth: 'zz' }) },
  ]);
  const { specs, skipped } = periodicRaSpecs(s);
  t.same(specs.map((x) => [x.port, x.dpKey, x.portKey, x.minIntervalS, x.maxIntervalS]), [['lr0-sw0', 7, 2, 10, 20]], 'one port, entering its peer switch port');
  t.same(skipped, ['lr0-bad: invalid ethernet source zz'], 'a binding that cannot be advertised is named');
  const po = periodicRaPacketOut(specs[0] as NonNullable<(typeof specs)[0]>);
  t.same(po.actions, [
    { kind: 'set_field', field: 'metadata', value: 7n },
    { kind: 'set_field', field: 'reg14', value: 2n },
    { kind: 'set_field', field: 'reg10', value: 16n, mask: 16n },
    { kind: 'resubmit', table: 8, inPort: 0xfffd },
  ], 'the switch datapath and port, local only, into the ingress pipeline');
});

t.test('which updates can change the advertisements (PeriodicRaInputs)', async (t) => {
  const s = sbOf([
    { logical_port: 'lr0-sw0', datapath: 'dp-lr', options: raOptions() },
    { logical_port: 'sw0-lr0', options: new Map([['peer', 'lr0-sw0']]) },
    { logical_port: 'vm1', options: new Map() },
    { logical_port: 'lr0-ghost', datapath: 'dp-lr', options: raOptions({ peer: 'sw9-lr0' }) },
  ]);
  const inputs = new PeriodicRaInputs();
  const pb = (uuid: string, logical_port: string, options: Map<string, string> = new Map()): { table: string; uuid: string; row: Row } =>
    ({ table: 'Port_Binding', uuid, row: { _uuid: uuid, _version: 'v', logical_port, options } as unknown as Row });
  t.ok(inputs.concerns([]), 'before the first pass: anything');
  periodicRaSpecs(s, inputs);
  t.notOk(inputs.concerns([pb('pb2', 'vm1'), pb('pb9', 'vm9'), { table: 'Logical_Flow', uuid: 'lf1' }]), 'a VIF changed or added, a flow: no');
  t.ok(inputs.concerns([pb('pb0', 'lr0-sw0', raOptions({ ipv6_ra_mtu: '1300' }))]), 'the advertising port changed');
  t.ok(inputs.concerns([{ table: 'Port_Binding', uuid: 'pb1' }]), 'its peer removed');
  t.ok(inputs.concerns([pb('pb7', 'sw9-lr0')]), 'a missing peer appeared');
  t.ok(inputs.concerns([pb('pb8', 'lr1-sw1', raOptions({ ipv6_ra_send_periodic: 'false' }))]), 'a port with the option at all');
  t.ok(inputs.concerns([{ table: 'Datapath_Binding', uuid: 'dp-sw' }]), 'a datapath (its tunnel key)');
});

t.test('the schedule', async (t) => {
  const timers = new FakeTimers();
  const sent: OfMessage[] = [];
  let refuse = false;
  const problems: string[] = [];
  const channel = { send: (m: OfMessage): void => { if (refuse) throw new ChannelError('overloaded', 'full'); sent.push(m); } };
  const ras = new PeriodicRas({ channel, timers, random: () => 0.5, onProblem: (m) => problems.push(m) });
  const s = sbOf([{ logical_port: 'lr0-sw0', datapath: 'dp-lr', options: raOptions() }, { logical_port: 'sw0-lr0', options: new Map([['peer', 'lr0-sw0']]) }]);
  ras.sync(periodicRaSpecs(s).specs);
  await timers.advance(14_999);
  t.equal(sent.length, 0, 'nothing before min_interval plus the random part (10 s + 0.5 of 10 s)');
  await timers.advance(1);
  t.equal(sent.length, 1, 'the first advertisement at 15 s');
  await timers.advance(15_000);
  t.equal(sent.length, 2, 'the next 15 s later');
  ras.sync(periodicRaSpecs(s).specs);
  await timers.advance(15_000);
  t.equal(sent.length, 3, 'the same intervals keep the schedule');
  const shorter = sbOf([{ logical_port: 'lr0-sw0', datapath: 'dp-lr', options: raOptions({ ipv6_ra_max_interval: '4', ipv6_ra_min_interval: '3' }) }, { logical_port: 'sw0-lr0', options: new Map([['peer', 'lr0-sw0']]) }]);
  ras.sync(periodicRaSpecs(shorter).specs);
  await timers.advance(3_500);
  t.equal(sent.length, 4, 'new intervals restart it (3 s + 0.5 of 1 s)');
  refuse = true;
  await timers.advance(3_500);
  t.same([sent.length, ras.stats.notSent, problems.length], [4, 1, 1], 'a full channel: counted, told, and tried again at the next turn');
  refuse = false;
  ras.sync([]);
  await timers.advance(60_000);
  t.same([sent.length, timers.pending], [4, 0], 'the binding gone: no more advertisements, no timer');
  ras.close();
});
