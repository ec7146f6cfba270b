// Goal: our OpenFlow 1.5 codec and channel drive a real ovs-vswitchd: every action kind and every
// match field class lands through a bundle and reads back as the text ovs-ofctl prints; packets
// traced through the installed pipeline get the verdicts the flows promise; reconciliation
// applies only the difference (counters of untouched flows survive); packet-ins arrive.
// Method: a private ovsdb-server + ovs-vswitchd (userspace datapath, dummy ports) per test file,
// ovs-ofctl/ovs-appctl as the oracle.

import t from 'tap';
import { OFPP } from '../../agent/openflow/actions.js';
import { ChannelError, OfChannel } from '../../agent/openflow/channel.js';
import type { GroupMod, OfMessage } from '../../agent/openflow/messages.js';
import type { FlowSpec, MaskedValue, OfAction } from '../../agent/openflow/types.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';

const ones = (bits: number): bigint => (1n << BigInt(bits)) - 1n;
const ex = (value: bigint, bits: number): MaskedValue => ({ value, mask: ones(bits) });
const mk = (value: bigint, mask: bigint): MaskedValue => ({ value, mask });
const M = (o: Record<string, MaskedValue>): Map<string, MaskedValue> => new Map(Object.entries(o));
const ip4 = ex(0x800n, 16);
const ip6 = ex(0x86ddn, 16);
const ipv4 = (s: string): bigint => s.split('.').reduce((a, b) => (a << 8n) | BigInt(Number(b)), 0n);
const ref = (field: string, start: number, end: number): { field: string; start: number; end: number } => ({ field, start, end });
const flow = (table: number, priority: number, match: Map<string, MaskedValue>, actions: OfAction[], cookie = BigInt(table * 1000 + priority)): FlowSpec =>
  ({ table, priority, match, actions, cookie });

const groups: GroupMod[] = [
  { command: 'add', group: { groupId: 1, type: 'select', selectionMethod: 'hash', fields: ['ipv4_src', 'ipv4_dst'], buckets: [
    { weight: 100, actions: [{ kind: 'ct', commit: true, zone: ref('reg13', 0, 15), table: 30, exec: [], nat: { kind: 'dst', addrMin: '10.0.0.10', portMin: 80 } }] },
    { weight: 50, actions: [{ kind: 'output', port: 3 }] },
  ] } },
  { command: 'add', group: { groupId: 2, type: 'all', buckets: [{ actions: [{ kind: 'output', port: 2 }] }, { actions: [{ kind: 'output', port: 3 }] }] } },
];

/** Each flow with the line `ovs-ofctl --no-stats dump-flows` prints for it (after the cookie). */
const flows: [FlowSpec, string][] = [
  [flow(0, 100, M({ in_port: ex(1n, 32), eth_type: ip4 }), [{ kind: 'load', dst: ref('reg14', 0, 15), value: 1n }, { kind: 'resubmit', table: 10 }]),
    'priority=100,ip,in_port=1 actions=set_field:0x1/0xffff->reg14,resubmit(,10)'],
  [flow(0, 90, M({ in_port: ex(3n, 32), eth_type: ip4 }), [{ kind: 'resubmit', table: 20 }]),
    'priority=90,ip,in_port=3 actions=resubmit(,20)'],
  [flow(0, 80, M({ in_port: ex(2n, 32), eth_type: ip6 }), [{ kind: 'set_field', field: 'metadata', value: 5n }, { kind: 'resubmit', table: 11, inPort: 3 }]),
    'priority=80,ipv6,in_port=2 actions=set_field:0x5->metadata,resubmit(3,11)'],
  [flow(0, 70, M({ in_port: ex(2n, 32), eth_type: ip4, ip_proto: ex(17n, 8), udp_dst: ex(9999n, 16) }), [{ kind: 'resubmit', table: 40 }]),
    'priority=70,udp,in_port=2,tp_dst=9999 actions=resubmit(,40)'],
  [flow(10, 200, M({ reg14: mk(1n, 0xffffn), eth_type: ip4, ipv4_dst: ex(ipv4('10.0.0.2'), 32) }),
    [{ kind: 'dec_ttl' }, { kind: 'set_field', field: 'eth_dst', value: 2n }, { kind: 'output', port: 2 }]),
    'table=10, priority=200,ip,reg14=0x1/0xffff,nw_dst=10.0.0.2 actions=dec_ttl,set_field:00:00:00:00:00:02->eth_dst,output:2'],
  [flow(10, 150, M({ eth_type: ip4, ipv4_dst: mk(ipv4('10.0.0.0'), 0xffffff00n), ip_proto: ex(6n, 8), tcp_dst: ex(80n, 16) }), [{ kind: 'group', groupId: 2 }]),
    'table=10, priority=150,tcp,nw_dst=10.0.0.0/24,tp_dst=80 actions=group:2'],
  [flow(10, 100, M({ eth_type: ip4, ip_proto: ex(17n, 8), udp_dst: ex(53n, 16) }),
    [{ kind: 'check_pkt_larger', pktLen: 1000, dst: ref('reg9', 1, 1) }, { kind: 'resubmit', table: 12 }]),
    'table=10, priority=100,udp,tp_dst=53 actions=check_pkt_larger(1000)->NXM_NX_REG9[1],resubmit(,12)'],
  [flow(10, 0, M({}), []), 'table=10, priority=0 actions=drop'],
  [flow(12, 100, M({ reg9: mk(2n, 2n) }), [{ kind: 'output', port: 2 }]), 'table=12, priority=100,reg9=0x2/0x2 actions=output:2'],
  [flow(12, 50, M({}), [{ kind: 'output', port: 3 }]), 'table=12, priority=50 actions=output:3'],
  [flow(20, 100, M({ eth_type: ip4, ipv4_src: ex(ipv4('10.0.0.1'), 32) }), [{ kind: 'conjunction', id: 1, clause: 0, nClauses: 2 }]),
    'table=20, priority=100,ip,nw_src=10.0.0.1 actions=conjunction(1,1/2)'],
  [flow(20, 100, M({ eth_type: ip4, ipv4_src: ex(ipv4('10.0.0.5'), 32) }), [{ kind: 'conjunction', id: 1, clause: 0, nClauses: 2 }]),
    'table=20, priority=100,ip,nw_src=10.0.0.5 actions=conjunction(1,1/2)'],
  [flow(20, 100, M({ eth_type: ip4, ip_proto: ex(6n, 8), tcp_dst: ex(22n, 16) }), [{ kind: 'conjunction', id: 1, clause: 1, nClauses: 2 }]),
    'table=20, priority=100,tcp,tp_dst=22 actions=conjunction(1,2/2)'],
  [flow(20, 100, M({ conj_id: ex(1n, 32), eth_type: ip4 }), [{ kind: 'output', port: 2 }]),
    'table=20, priority=100,conj_id=1,ip actions=output:2'],
  [flow(30, 100, M({ eth_type: ip4, ct_state: mk(0x22n, 0x22n) }), [{ kind: 'ct_clear' }, { kind: 'output', port: 1 }]),
    'table=30, priority=100,ct_state=+est+trk,ip actions=ct_clear,output:1'],
  [flow(30, 50, M({ eth_type: ip4, ct_state: mk(0n, 0x20n) }), [{ kind: 'ct', commit: false, zone: 5, table: 30, exec: [] }]),
    'table=30, priority=50,ct_state=-trk,ip actions=ct(table=30,zone=5)'],
  [flow(31, 100, M({ eth_type: ip4, ip_proto: ex(6n, 8), ct_state: mk(0x21n, 0x21n) }), [{
    kind: 'ct', commit: true, zone: ref('reg13', 0, 15), table: 32,
    nat: { kind: 'src', addrMin: '10.0.1.1', addrMax: '10.0.1.5', portMin: 1000, portMax: 2000, random: true },
    exec: [{ kind: 'load', dst: ref('ct_mark', 0, 0), value: 1n }, { kind: 'set_field', field: 'ct_label', value: 5n, mask: 0xffn }],
  }]), 'table=31, priority=100,ct_state=+new+trk,tcp actions=ct(commit,table=32,zone=NXM_NX_REG13[0..15],nat(src=10.0.1.1-10.0.1.5:1000-2000,random),exec(set_field:0x1/0x1->ct_mark,set_field:0x5/0xff->ct_label))'],
  [flow(31, 90, M({ eth_type: ip6, ct_state: mk(0x21n, 0x21n) }), [{ kind: 'ct', commit: true, force: true, exec: [], nat: { kind: 'dst', addrMin: 'fd00::5' } }]),
    'table=31, priority=90,ct_state=+new+trk,ipv6 actions=ct(commit,force,nat(dst=fd00::5))'],
  [flow(33, 100, M({
    ct_mark: mk(1n, 1n), ct_label: mk(1n << 100n, 1n << 100n), pkt_mark: ex(7n, 32), metadata: ex(5n, 64), reg0: ex(1n, 32),
    reg15: mk(0xffff0000n, 0xffff0000n), ct_zone: ex(5n, 16), eth_type: ip4, ip_frag: mk(0n, 1n),
  }), [
    { kind: 'push', src: ref('reg0', 0, 31) }, { kind: 'pop', dst: ref('reg1', 0, 31) },
    { kind: 'move', src: ref('reg0', 0, 15), dst: ref('reg2', 16, 31) }, { kind: 'output_reg', src: ref('reg15', 0, 15) },
    { kind: 'note', data: Buffer.from('ovnts!') }, { kind: 'exit' },
  ]), 'table=33, priority=100,pkt_mark=0x7,ct_zone=5,ct_mark=0x1/0x1,ct_label=0x10000000000000000000000000/0x10000000000000000000000000,ip,reg0=0x1,reg15=0xffff0000/0xffff0000,metadata=0x5,nw_frag=no actions=push:NXM_NX_REG0[],pop:NXM_NX_REG1[],move:NXM_NX_REG0[0..15]->NXM_NX_REG2[16..31],output:NXM_NX_REG15[0..15],note:6f.76.6e.74.73.21,exit'],
  [flow(34, 100, M({ tun_id: ex(5n, 64), tun_metadata0: ex(0x1234n, 32) }), [{ kind: 'set_field', field: 'tun_id', value: 6n }, { kind: 'output', port: 1 }]),
    'table=34, priority=100,tun_id=0x5,tun_metadata0=0x1234 actions=set_field:0x6->tun_id,output:1'],
  [flow(35, 100, M({
    eth_type: ip6, ip_proto: ex(58n, 8), icmpv6_type: ex(135n, 8), icmpv6_code: ex(0n, 8), nd_target: ex(0xfe800000000000000000000000000001n, 128), nd_sll: ex(1n, 48),
  }), [{ kind: 'controller', userdata: Buffer.from('cafe', 'hex'), pause: true, meterId: 7 }, { kind: 'output', port: 1 }]),
    'table=35, priority=100,icmp6,icmp_type=135,icmp_code=0,nd_target=fe80::1,nd_sll=00:00:00:00:00:01 actions=controller(userdata=ca.fe,pause,meter_id=7),output:1'],
  [flow(35, 90, M({
    eth_type: ex(0x806n, 16), arp_op: ex(1n, 16), arp_spa: ex(ipv4('10.0.0.1'), 32), arp_tpa: mk(ipv4('10.0.0.0'), 0xffffff00n), arp_sha: ex(0x0a0000000001n, 48), arp_tha: ex(0n, 48),
  }), [{ kind: 'controller_op', opcode: 0, nested: [{ kind: 'load', dst: ref('reg0', 0, 3), value: 1n }, { kind: 'output', port: 2 }] }]),
    'table=35, priority=90,arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,arp_op=1,arp_sha=0a:00:00:00:00:01,arp_tha=00:00:00:00:00:00 actions=controller(userdata=00.00.00.00.00.00.00.00.00.19.00.10.00.01.01.08.00.00.00.01.00.00.00.0f.00.00.00.10.00.00.00.02.00.00.00.00.00.00.00.00)'],
  [flow(35, 80, M({
    eth_type: ip6, ipv6_src: mk(0xfd00n << 112n, ones(64) << 64n), ipv6_dst: ex((0xfd00n << 112n) | 1n, 128), ipv6_label: ex(0x12345n, 20), ip_dscp: ex(10n, 6), ip_ecn: ex(1n, 2), nw_ttl: ex(64n, 8),
  }), [{ kind: 'set_field', field: 'ipv6_label', value: 0x54321n }, { kind: 'output', port: 3 }]),
    'table=35, priority=80,ipv6,ipv6_src=fd00::/64,ipv6_dst=fd00::1,ipv6_label=0x12345,nw_tos=40,nw_ecn=1,nw_ttl=64 actions=set_field:0x54321->ipv6_label,output:3'],
  [flow(35, 70, M({ eth_type: ip4, ip_proto: ex(1n, 8), icmpv4_type: ex(8n, 8), icmpv4_code: ex(0n, 8) }),
    [{ kind: 'controller', userdata: Buffer.alloc(0), maxLen: 128, reason: 'no_match', controllerId: 3 }]),
    'table=35, priority=70,icmp,icmp_type=8,icmp_code=0 actions=controller(reason=no_match,max_len=128,id=3)'],
  [flow(35, 60, M({ eth_type: ip4, ip_proto: ex(132n, 8), sctp_src: ex(1n, 16), sctp_dst: ex(2n, 16) }),
    [{ kind: 'clone', actions: [{ kind: 'push_vlan', ethertype: 0x8100 }, { kind: 'set_field', field: 'vlan_tci', value: 0x1005n }, { kind: 'output', port: 2 }] }, { kind: 'output', port: 3 }]),
    'table=35, priority=60,sctp,tp_src=1,tp_dst=2 actions=clone(push_vlan:0x8100,set_field:0x1005->vlan_tci,output:2),output:3'],
  [flow(35, 50, M({ vlan_tci: mk(0x1000n, 0x1000n) }), [{ kind: 'pop_vlan' }, { kind: 'output', port: 1 }]),
    'table=35, priority=50,vlan_tci=0x1000/0x1000 actions=pop_vlan,output:1'],
  [flow(35, 40, M({ eth_type: ip4, ip_proto: ex(6n, 8), tcp_src: ex(1n, 16), tcp_flags: mk(2n, 2n) }), [{ kind: 'group', groupId: 1 }]),
    'table=35, priority=40,tcp,tp_src=1,tcp_flags=+syn actions=group:1'],
  [flow(35, 30, M({ eth_src: mk(0x0a0000000000n, 0xff0000000000n), eth_dst: ex(0xffffffffffffn, 48), eth_type: ip4, ip_proto: ex(17n, 8), udp_src: ex(68n, 16), udp_dst: ex(67n, 16) }),
    [{ kind: 'resubmit', table: 36, inPort: 3 }]),
    'table=35, priority=30,udp,dl_src=0a:00:00:00:00:00/ff:00:00:00:00:00,dl_dst=ff:ff:ff:ff:ff:ff,tp_src=68,tp_dst=67 actions=resubmit(3,36)'],
  [flow(36, 100, M({ eth_type: ip4 }), [
    { kind: 'dec_ttl_cnt_ids', controllerIds: [] }, { kind: 'set_field', field: 'ip_dscp', value: 46n },
    { kind: 'set_field', field: 'tun_metadata0', value: 0xabcdn }, { kind: 'move', src: ref('xxreg0', 96, 127), dst: ref('reg5', 0, 31) },
    { kind: 'load', dst: ref('xxreg1', 64, 127), value: 0x1122334455667788n }, { kind: 'output_reg', src: ref('reg7', 0, 31) },
  ]), 'table=36, priority=100,ip actions=dec_ttl(),set_field:46->ip_dscp,set_field:0xabcd->tun_metadata0,move:NXM_NX_XXREG0[96..127]->NXM_NX_REG5[],set_field:0x11223344556677880000000000000000/0xffffffffffffffff0000000000000000->xxreg1,output:NXM_NX_REG7[]'],
  [flow(37, 100, M({ eth_type: ip6 }), [{ kind: 'dec_ttl_cnt_ids', controllerIds: [1, 2] }, { kind: 'controller_op', opcode: 9, nested: [], meterId: 4 }]),
    'table=37, priority=100,ipv6 actions=dec_ttl(1,2),controller(userdata=00.00.00.09.00.00.00.00,meter_id=4)'],
  [flow(40, 100, M({ eth_type: ip4, ip_proto: ex(17n, 8), udp_dst: ex(9999n, 16) }),
    [{ kind: 'controller', userdata: Buffer.from('deadbeef', 'hex'), pause: true }, { kind: 'output', port: 3 }]),
    'table=40, priority=100,udp,tp_dst=9999 actions=controller(userdata=de.ad.be.ef,pause),output:3'],
  [flow(39, 100, M({ reg15: ex(3n, 32), metadata: ex(1n, 64) }), [{ kind: 'bundle_active_backup', members: [7, 5, 6] }]),
    'table=39, priority=100,reg15=0x3,metadata=0x1 actions=bundle(eth_src,0,active_backup,ofport,members:7,5,6)'],
  // ovn-controller's path MTU error for a multichassis port sets the TTL with OFPAT_SET_NW_TTL.
  [flow(44, 100, M({ eth_type: ip4 }), [{ kind: 'set_nw_ttl', ttl: 255 }, { kind: 'output', port: 1 }]),
    'table=44, priority=100,ip actions=mod_nw_ttl:255,output:1'],
  // OVN's drop sampling: NXAST_SAMPLE before the drop.
  [flow(42, 100, M({ eth_type: ip4, metadata: ex(5n, 64) }), [{ kind: 'sample', probability: 65535, collectorSetId: 123, obsDomainId: 0x01000005, obsPointId: 0xdeadbeef }]),
    'table=42, priority=100,ip,metadata=0x5 actions=sample(probability=65535,collector_set_id=123,obs_domain_id=16777221,obs_point_id=3735928559)'],
  [flow(41, 100, M({ eth_type: ip4 }), [{ kind: 'output', port: OFPP.CONTROLLER }]),
    'table=41, priority=100,ip actions=CONTROLLER:65535'],
  // OVN's hairpin detection (table 68): learn() a reply flow into table 69.
  [flow(68, 100, M({ eth_type: ip4, ip_proto: ex(6n, 8), ipv4_src: ex(ipv4('10.0.0.2'), 32), ipv4_dst: ex(ipv4('10.0.0.2'), 32), tcp_dst: ex(8080n, 16) }), [
    { kind: 'load', dst: ref('reg10', 7, 7), value: 1n },
    { kind: 'learn', table: 69, priority: 0x8000, cookie: 0x1234abcdn, deleteLearned: true, specs: [
      { kind: 'match', dst: ref('metadata', 0, 63), src: ref('metadata', 0, 63) },
      { kind: 'match', dst: ref('eth_type', 0, 15), value: 0x800n },
      { kind: 'match', dst: ref('ipv4_src', 0, 31), src: ref('ipv4_src', 0, 31) },
      { kind: 'match', dst: ref('ipv4_dst', 0, 31), value: ipv4('10.0.0.100') },
      { kind: 'match', dst: ref('ip_proto', 0, 7), value: 6n },
      { kind: 'match', dst: ref('tcp_src', 0, 15), src: ref('tcp_dst', 0, 15) },
      { kind: 'load', dst: ref('reg10', 7, 7), value: 1n },
    ] },
  ]), 'table=68, priority=100,tcp,nw_src=10.0.0.2,nw_dst=10.0.0.2,tp_dst=8080 actions=set_field:0x80/0x80->reg10,learn(table=69,delete_learned,cookie=0x1234abcd,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.100,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],load:0x1->NXM_NX_REG10[7])'],
  // The same for IPv6 with an immediate of 128 bits, and for a port-less VIP (no L4 spec).
  [flow(68, 90, M({ eth_type: ip6, ipv6_src: ex(0xfd00n << 112n | 2n, 128), ipv6_dst: ex(0xfd00n << 112n | 2n, 128) }), [
    { kind: 'learn', table: 69, priority: 0x8000, cookie: 0x1234abcdn, deleteLearned: true, specs: [
      { kind: 'match', dst: ref('metadata', 0, 63), src: ref('metadata', 0, 63) },
      { kind: 'match', dst: ref('eth_type', 0, 15), value: 0x86ddn },
      { kind: 'match', dst: ref('ipv6_src', 0, 127), src: ref('ipv6_src', 0, 127) },
      { kind: 'match', dst: ref('ipv6_dst', 0, 127), value: 0xfd00n << 112n | 0x100n },
      { kind: 'match', dst: ref('ip_proto', 0, 7), src: ref('ip_proto', 0, 7) },
      { kind: 'load', dst: ref('reg10', 7, 7), value: 1n },
    ] },
  ]), 'table=68, priority=90,ipv6,ipv6_src=fd00::2,ipv6_dst=fd00::2 actions=learn(table=69,delete_learned,cookie=0x1234abcd,OXM_OF_METADATA[],eth_type=0x86dd,NXM_NX_IPV6_SRC[],ipv6_dst=fd00::100,NXM_OF_IP_PROTO[],load:0x1->NXM_NX_REG10[7])'],
];

function expectedText(fs: readonly [FlowSpec, string][]): string[] {
  return fs.map(([f, text]) => `cookie=0x${f.cookie.toString(16)}, ${text}`).sort();
}

/** `ovs-ofctl --no-stats dump-flows` lines, sorted, leading space and stats removed. */
async function dumpText(sw: OvsSwitch): Promise<string[]> {
  const out = await sw.ofctl('dump-flows', '--no-stats', '--no-names');
  return out.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('OFPST_FLOW')).sort();
}

/** The last line of ofproto/trace: the datapath verdict. */
async function trace(sw: OvsSwitch, packet: string): Promise<{ verdict: string; text: string }> {
  const text = await sw.appctl('ofproto/trace', sw.bridge, packet);
  const line = text.split('\n').find((l) => l.startsWith('Datapath actions:')) ?? '';
  return { verdict: line.slice('Datapath actions:'.length).trim(), text };
}

/** Ethernet + IPv4 + UDP, checksums left zero (the switch parses, it does not verify). */
function udpPacket(dstIp: string, dport: number): Buffer {
  const payload = Buffer.alloc(8);
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(1234, 0);
  udp.writeUInt16BE(dport, 2);
  udp.writeUInt16BE(8 + payload.length, 4);
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + 8 + payload.length, 2);
  ip[8] = 64;
  ip[9] = 17;
  ip.writeUInt32BE(Number(ipv4('10.0.0.1')), 12);
  ip.writeUInt32BE(Number(ipv4(dstIp)), 16);
  const eth = Buffer.from('000000000002' + '0a0000000001' + '0800', 'hex');
  return Buffer.concat([eth, ip, udp, payload]);
}

async function main(): Promise<void> {
  /** The desired flow set as the subtests change it. */
  let current: FlowSpec[] = flows.map(([f]) => f);
  const flowsNow = (): FlowSpec[] => current;

  const t0 = performance.now();
  const sw = await startOvsSwitch({ ports: 3 });
  t.teardown(() => sw.stop());
  const asyncMsgs: OfMessage[] = [];
  const ch = await OfChannel.connect({ target: sw.mgmtTarget, packetIn2: true, onMessage: (m) => asyncMsgs.push(m) });
  t.teardown(() => ch.close());
  t.comment(`switch and channel up in ${(performance.now() - t0).toFixed(0)} ms`);

  /** Waits (bounded) until an async message satisfying 'pred' arrives. */
  async function waitFor<T extends OfMessage>(pred: (m: OfMessage) => m is T, timeoutMs = 5000): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const i = asyncMsgs.findIndex(pred);
      if (i >= 0) return asyncMsgs.splice(i, 1)[0] as T;
      if (performance.now() > deadline) throw new Error('no such message arrived');
      await ch.barrier();
    }
  }

  t.test('features and TLV table', async (t) => {
    const [features] = await ch.request({ kind: 'features_request' });
    t.equal(features?.kind, 'features_reply');
    await ch.command({ kind: 'tlv_table_mod', command: 'add', mappings: [{ optClass: 0x0102, optType: 0x80, optLen: 4, index: 0 }] });
    const [reply] = await ch.request({ kind: 'tlv_table_request' });
    t.equal(reply?.kind, 'tlv_table_reply');
    if (reply?.kind === 'tlv_table_reply') t.strictSame(reply.mappings, [{ optClass: 0x0102, optType: 0x80, optLen: 4, index: 0 }]);
    // The same mapping again is refused, and the refusal reads as a name.
    const err = await ch.command({ kind: 'tlv_table_mod', command: 'add', mappings: [{ optClass: 0x0102, optType: 0x80, optLen: 4, index: 0 }] }).catch((e: unknown) => e);
    t.ok(err instanceof ChannelError && err.kind === 'openflow_error', 'duplicate mapping refused');
    t.match(String(err), /NXTTMFC_ALREADY_MAPPED/);
  });

  t.test('install every action and match class through bundles; ovs-ofctl reads them back', async (t) => {
    const started = performance.now();
    await ch.installBatch(groups);
    await ch.installBatch(flows.map(([f]) => ({ command: 'add' as const, ...f })));
    t.comment(`installed ${groups.length} groups and ${flows.length} flows in ${(performance.now() - started).toFixed(1)} ms`);
    t.strictSame(await dumpText(sw), expectedText(flows));
    const groupsText = await sw.ofctl('dump-groups');
    t.match(groupsText, /group_id=1,type=select,selection_method=hash,fields\(ip_src,ip_dst\),bucket=bucket_id:0,weight:100,actions=ct\(commit,table=30,zone=NXM_NX_REG13\[0\.\.15\],nat\(dst=10\.0\.0\.10:80\)\),bucket=bucket_id:1,weight:50,actions=output:3/);
    t.match(groupsText, /group_id=2,type=all,bucket=bucket_id:0,actions=output:2,bucket=bucket_id:1,actions=output:3/);
  });

  t.test('reconciling against what was just installed changes nothing', async (t) => {
    // Every action comes back from the switch re-encoded by Open vSwitch; none may look changed.
    const desired = flows.map(([f]) => f);
    const d = await ch.reconcile(desired);
    t.equal(d.mods.length, 0, 'no flow_mods');
    t.equal(d.unchanged, flows.length);
    const dumped = await ch.dumpFlows();
    t.equal(dumped.length, flows.length);
    t.ok(dumped.every((f) => Array.isArray(f.actions)), 'every installed action decodes');
  });

  t.test('ofproto/trace verdicts through the installed pipeline', async (t) => {
    const routed = await trace(sw, 'in_port=1,ip,dl_src=0a:00:00:00:00:01,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64');
    t.match(routed.text, /set_field:00:00:00:00:00:02->eth_dst\s+output:2/, 'table 10 routes to port 2');
    t.match(routed.verdict, /set\(eth\(dst=00:00:00:00:00:02\)\)/);
    t.match(routed.text, /Final flow: .*nw_ttl=63/, 'dec_ttl took effect');
    t.equal((await trace(sw, 'in_port=1,ip,nw_dst=10.0.0.9')).verdict, 'drop', 'no route: table 10 priority 0 drops');
    const conj = await trace(sw, 'in_port=3,tcp,nw_src=10.0.0.5,tp_dst=22');
    t.match(conj.text, /conj_id=1,ip, priority 100/, 'the conjunction completes');
    t.not(conj.verdict, 'drop');
    t.equal((await trace(sw, 'in_port=3,tcp,nw_src=10.0.0.6,tp_dst=22')).verdict, 'drop', 'one clause missing: no match');
    const grp = await trace(sw, 'in_port=1,tcp,nw_dst=10.0.0.7,tp_dst=80');
    t.match(grp.text, /group:2/);
    t.match(grp.text, /bucket 0[\s\S]*output:2[\s\S]*bucket 1[\s\S]*output:3/, 'an all group runs every bucket');
    const small = await trace(sw, 'in_port=1,udp,nw_dst=10.0.0.7,udp_dst=53');
    t.match(small.text, /check_pkt_larger\(1000\)->NXM_NX_REG9\[1\][\s\S]*priority 50[\s\S]*output:3/, 'a small packet is not larger than 1000');
  });

  /** Sends one packet into the pipeline through a packet-out to OFPP_TABLE. */
  async function inject(packet: Buffer, inPort = 1): Promise<void> {
    await ch.command({ kind: 'packet_out', bufferId: 0xffffffff, inPort, actions: [{ kind: 'output', port: OFPP.TABLE }], data: packet });
  }

  t.test('reconcile applies only the difference', async (t) => {
    await inject(udpPacket('10.0.0.2', 5000));
    await inject(udpPacket('10.0.0.2', 5001));
    const key = (f: { table: number; priority: number }): string => `${f.table}/${f.priority}`;
    const before = new Map((await ch.dumpFlows()).map((f) => [key(f), f]));
    t.equal(before.get('10/200')?.packetCount, 2n, 'the routed flow counted both packets');
    // Drift: one flow goes, one changes its actions, one is new.
    const desired = flows.map(([f]) => f).filter((f) => key(f) !== '35/70').map((f) =>
      key(f) === '12/50' ? { ...f, actions: [{ kind: 'output', port: 1 } as const] } : f);
    desired.push(flow(50, 10, M({ eth_type: ip4 }), [{ kind: 'output', port: 3 }]));
    current = desired;
    const d = await ch.reconcile(desired);
    t.same({ added: d.added, modified: d.modified, deleted: d.deleted, unchanged: d.unchanged },
      { added: 1, modified: 1, deleted: 1, unchanged: flows.length - 2 });
    t.same(d.mods.map((m) => `${m.command} ${m.table}/${m.priority}`), ['delete_strict 35/70', 'modify_strict 12/50', 'add 50/10']);
    const after = new Map((await ch.dumpFlows()).map((f) => [key(f), f]));
    t.equal(after.get('10/200')?.packetCount, 2n, 'an untouched flow keeps its counters');
    const b = before.get('10/200');
    const a = after.get('10/200');
    t.ok(a !== undefined && b !== undefined && (a.durationSec ?? 0) * 1e9 + (a.durationNsec ?? 0) >= (b.durationSec ?? 0) * 1e9 + (b.durationNsec ?? 0),
      'and its age: it was not replaced');
    t.equal(after.get('12/50')?.packetCount, before.get('12/50')?.packetCount, 'a modified flow keeps its counters too');
    t.notOk(after.has('35/70'));
    const expected = flows.filter(([f]) => key(f) !== '35/70').map(([f, text]): [FlowSpec, string] =>
      key(f) === '12/50' ? [f, text.replace('output:3', 'output:1')] : [f, text]);
    expected.push([desired[desired.length - 1] as FlowSpec, 'table=50, priority=10,ip actions=output:3']);
    t.strictSame(await dumpText(sw), expectedText(expected));
    t.equal((await ch.reconcile(desired)).mods.length, 0, 'converged');
  });

  t.test('packet-ins: NXT_PACKET_IN2 with userdata and continuation, resume, plain OFPT_PACKET_IN', async (t) => {
    asyncMsgs.length = 0;
    // A packet arriving on dummy port p2, as if from the wire.
    await sw.appctl('netdev-dummy/receive', 'p2', udpPacket('10.0.0.3', 9999).toString('hex'));
    const pin = await waitFor((m): m is Extract<OfMessage, { kind: 'packet_in2' }> => m.kind === 'packet_in2');
    t.strictSame(pin.userdata, Buffer.from('deadbeef', 'hex'));
    // A paused packet-in carries table and cookie inside its continuation; the top level says 0.
    t.equal(pin.reason, 1, 'reason: action');
    t.equal(pin.metadata?.get('in_port')?.value, 2n, 'metadata carries in_port');
    t.ok(pin.continuation !== undefined && pin.continuation.length > 0, 'pause gives a continuation');
    t.equal(pin.packet.length, udpPacket('10.0.0.3', 9999).length);
    const p3 = (await sw.ofctl('dump-ports', '3')).match(/tx pkts=(\d+)/);
    await ch.command({ kind: 'resume', packet: pin.packet, ...(pin.metadata !== undefined ? { metadata: pin.metadata } : {}), continuation: pin.continuation as Buffer });
    const p3after = (await sw.ofctl('dump-ports', '3')).match(/tx pkts=(\d+)/);
    t.equal(Number(p3after?.[1]), Number(p3?.[1]) + 1, 'the resumed pipeline output to port 3');

    ch.send({ kind: 'set_packet_in_format', format: 0 });
    const pkt = udpPacket('10.0.0.4', 7);
    await ch.command({ kind: 'packet_out', bufferId: 0xffffffff, inPort: 1, actions: [{ kind: 'resubmit', table: 41 }], data: pkt });
    const plain = await waitFor((m): m is Extract<OfMessage, { kind: 'packet_in' }> => m.kind === 'packet_in');
    t.equal(plain.table, 41);
    t.equal(plain.cookie, 41n * 1000n + 100n);
    t.strictSame(plain.data, pkt);
    t.equal(plain.match.get('in_port')?.value, 1n);
    ch.send({ kind: 'set_packet_in_format', format: 2 });
  });

  t.test('groups read back and reconcile', async (t) => {
    const installed = await ch.dumpGroups();
    t.same(installed.map((g) => g.groupId).sort(), [1, 2]);
    const want = groups.map((g) => g.group);
    const noop = await ch.reconcile(flowsNow(), { groups: want });
    t.same({ before: noop.groupDiff?.before.length, after: noop.groupDiff?.after.length, unchanged: noop.groupDiff?.unchanged }, { before: 0, after: 0, unchanged: 2 },
      'the groups as installed equal the groups as sent');
    t.equal(noop.mods.length, 0);
    const g2: GroupMod['group'] = { groupId: 2, type: 'all', buckets: [{ actions: [{ kind: 'output', port: 2 }] }, { actions: [{ kind: 'output', port: 1 }] }] };
    // A select group whose buckets name no weight: Open vSwitch reports weight 1 for them.
    const g3: GroupMod['group'] = { groupId: 3, type: 'select', buckets: [{ actions: [{ kind: 'output', port: 3 }] }, { actions: [{ kind: 'output', port: 2 }] }] };
    const changed = await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2, g3] });
    t.same(changed.groupDiff?.before.map((m) => `${m.command} ${m.group.groupId}`), ['modify 2', 'add 3']);
    const text = await sw.ofctl('dump-groups');
    t.match(text, /group_id=2,type=all,bucket=bucket_id:0,actions=output:2,bucket=bucket_id:1,actions=output:1/);
    t.match(text, /group_id=3,type=select,bucket=bucket_id:0,actions=output:3,bucket=bucket_id:1,actions=output:2/);
    const again = await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2, g3] });
    t.same([again.groupDiff?.before.length, again.groupDiff?.after.length], [0, 0], 'default weights do not look like a change');
    // fwd_group's group: buckets that watch a port and load the outport's low 16 bits.
    const g4: GroupMod['group'] = {
      groupId: 4, type: 'select', selectionMethod: 'dp_hash', buckets: [
        { watchPort: 2, actions: [{ kind: 'set_field', field: 'reg15', value: 10n, mask: 0xffffn }, { kind: 'resubmit', table: 37 }] },
        { watchPort: 3, actions: [{ kind: 'set_field', field: 'reg15', value: 5n, mask: 0xffffn }, { kind: 'resubmit', table: 37 }] },
      ],
    };
    const watched = await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2, g3, g4] });
    t.same(watched.groupDiff?.before.map((m) => `${m.command} ${m.group.groupId}`), ['add 4']);
    t.match(await sw.ofctl('dump-groups'), /group_id=4,type=select,selection_method=dp_hash,bucket=bucket_id:0,watch_port:2,actions=set_field:0xa\/0xffff->reg15,resubmit\(,37\),bucket=bucket_id:1,watch_port:3,actions=set_field:0x5\/0xffff->reg15,resubmit\(,37\)/);
    t.same((await ch.dumpGroups()).find((g) => g.groupId === 4)?.buckets.map((b) => b.watchPort), [2, 3], 'watch_port reads back');
    const watchedAgain = await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2, g3, g4] });
    t.same([watchedAgain.groupDiff?.before.length, watchedAgain.groupDiff?.after.length], [0, 0], 'watched buckets do not look like a change');
    const unwatched = await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2, g3, { ...g4, buckets: g4.buckets.map((b) => ({ actions: b.actions })) }] });
    t.same(unwatched.groupDiff?.before.map((m) => `${m.command} ${m.group.groupId}`), ['modify 4'], 'a watch_port gone is a change');
    // select's group with the symmetric L4 hash: the parameter lands, reads back, and a group
    // without it is another group.
    const load = (id: bigint): OfAction => ({ kind: 'load', dst: ref('xreg4', 48, 63), value: id });
    const g5: GroupMod['group'] = {
      groupId: 5, type: 'select', selectionMethod: 'dp_hash', selectionMethodParam: 1n << 32n, buckets: [
        { weight: 100, actions: [load(1n), { kind: 'resubmit', table: 22 }] },
        { weight: 50, actions: [load(2n), { kind: 'resubmit', table: 22 }] },
      ],
    };
    const base = [want[0] as GroupMod['group'], g2, g3];
    const sym = await ch.reconcile(flowsNow(), { groups: [...base, g5] });
    t.same(sym.groupDiff?.before.map((m) => `${m.command} ${m.group.groupId}`), ['add 5']);
    t.match(await sw.ofctl('dump-groups'), /group_id=5,type=select,selection_method=dp_hash,selection_method_param=4294967296,bucket=bucket_id:0,weight:100,actions=set_field:0x1000000000000\/0xffff000000000000->xreg4,resubmit\(,22\),bucket=bucket_id:1,weight:50,actions=set_field:0x2000000000000\/0xffff000000000000->xreg4,resubmit\(,22\)/);
    t.equal((await ch.dumpGroups()).find((g) => g.groupId === 5)?.selectionMethodParam, 1n << 32n, 'the parameter reads back');
    const symAgain = await ch.reconcile(flowsNow(), { groups: [...base, g5] });
    t.same([symAgain.groupDiff?.before.length, symAgain.groupDiff?.after.length], [0, 0], 'the parameter does not look like a change');
    const { selectionMethodParam: _p, ...g5plain } = g5;
    const plainNow = await ch.reconcile(flowsNow(), { groups: [...base, g5plain] });
    t.same(plainNow.groupDiff?.before.map((m) => `${m.command} ${m.group.groupId}`), ['modify 5'], 'the parameter gone is a change');
    t.match(await sw.ofctl('dump-groups'), /group_id=5,type=select,selection_method=dp_hash,bucket=/);
    await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2, g3] });
    const removed = await ch.reconcile(flowsNow(), { groups: [want[0] as GroupMod['group'], g2] });
    t.same(removed.groupDiff?.after.map((m) => `${m.command} ${m.group.groupId}`), ['delete 3']);
    t.notMatch(await sw.ofctl('dump-groups'), /group_id=3/);
    t.equal((await ch.dumpFlows()).length, flowsNow().length, 'no flow was lost on the way');
  });

  t.test('a match listed dependents first still lands: prerequisites go first on the wire', async (t) => {
    // The compiler builds matches in whatever order its expansion gives; Open vSwitch refuses a
    // field whose prerequisite has not been read yet (OFPBMC_BAD_PREREQ).
    const v = (value: bigint, mask: bigint): { value: bigint; mask: bigint } => ({ value, mask });
    const match = new Map([
      ['nd_target', v(1n, (1n << 128n) - 1n)], ['icmpv6_code', v(0n, 0xffn)], ['icmpv6_type', v(135n, 0xffn)],
      ['ip_proto', v(58n, 0xffn)], ['eth_type', v(0x86ddn, 0xffffn)], ['metadata', v(7n, (1n << 64n) - 1n)],
    ]);
    await ch.installBatch([{ command: 'add', table: 200, priority: 5, cookie: 0n, match, actions: [] }]);
    t.match(await sw.ofctl('dump-flows', 'table=200'), /icmp6,metadata=0x7,icmp_type=135,icmp_code=0,nd_target=::1/);
  });
}

if (ovsSwitchInstalled()) await main();
else t.plan(0, 'Open vSwitch is not installed');
