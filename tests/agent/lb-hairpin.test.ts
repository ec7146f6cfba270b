// Goal: a Load_Balancer's hairpin flows (tables 68..70) take the shape ovn-controller 23.03.1's
// lflow.c gives them, and bad SB input is skipped entry by entry without failing the row.
// Method: rows from the fixtures, flows printed as ovs-ofctl text and compared with lines
// written from lflow.c (the real ovn-controller comparison is lb-hairpin-vs-ovn-controller).
import t from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import { parseLbAddress } from '../../agent/actions/lb-key.js';
import { lbHairpinFlows, parseLbVip, parseLoadBalancer } from '../../agent/flows/lb-hairpin.js';
import type { Locality } from '../../agent/flows/local-datapaths.js';
import { SbStore } from '../../agent/flows/sb-store.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { datapath, dpGroup, loadBalancer, U, type LoadBalancerOpts } from './flows-fixtures.js';

const sw0 = U(1, 0xd);
const sw1 = U(2, 0xd);
const sw2 = U(3, 0xd);
const group = U(1, 0xf);
const store = new SbStore();
store.apply({
  reset: true, fromRevision: 0, toRevision: 1, changes: [
    { table: 'Datapath_Binding', uuid: sw0, row: datapath(sw0, 1, 'switch') },
    { table: 'Datapath_Binding', uuid: sw1, row: datapath(sw1, 2, 'switch') },
    { table: 'Datapath_Binding', uuid: sw2, row: datapath(sw2, 3, 'switch') },
    { table: 'Logical_DP_Group', uuid: group, row: dpGroup(group, [sw1, sw2]) },
  ],
});
/** sw0 and sw1 are local (only the keys matter to the hairpin flows). */
const locality = { datapaths: new Map(), byKey: new Map([[1, {}], [2, {}]]) } as unknown as Locality;
const lbUuid = '0a0b0c0d-0000-4000-8000-000000000001';

function flows(vips: Record<string, string>, o: LoadBalancerOpts, useCtMark = true): string[] {
  const row = loadBalancer(lbUuid, vips, o) as unknown as sb.Load_Balancer;
  return lbHairpinFlows(store, locality, useCtMark, row).map((f) => formatFlow(f, { cookie: true })).sort();
}

t.test('addresses and VIPs read as ip_address_and_port_from_lb_key reads them', async (t) => {
  t.same(parseLbAddress('10.0.0.1:80'), { v6: false, ip: 0x0a000001n, port: 80 });
  t.same(parseLbAddress('10.0.0.1'), { v6: false, ip: 0x0a000001n, port: 0 });
  t.same(parseLbAddress('[fd00::1]:443'), { v6: true, ip: (0xfd00n << 112n) | 1n, port: 443 });
  t.same(parseLbAddress('fd00::1'), { v6: true, ip: (0xfd00n << 112n) | 1n, port: 0 }, 'a bare IPv6 address has no port');
  for (const bad of ['10.0.0.256', '10.0.0.1:65536', '10.0.0.1:x', '[fd00::1', '[fd00::1]x', 'host:80', '', '10.0.0', 'fd00::zz']) {
    t.equal(parseLbAddress(bad), undefined, `"${bad}" is not an address`);
  }
  t.same(parseLbVip('10.0.0.10:80', '10.0.0.2:8080,,10.0.0.3:8080')?.backends.length, 2, 'empty tokens are skipped');
  t.same(parseLbVip('10.0.0.10', '')?.backends, [], 'a VIP without backends is a VIP');
  t.equal(parseLbVip('10.0.0.10:80', '10.0.0.2:8080,10.0.0.3'), undefined, 'a backend without the VIP\'s port drops the VIP');
  t.equal(parseLbVip('10.0.0.10', '10.0.0.2:8080'), undefined, 'a port on a backend of a port-less VIP drops the VIP');
  t.equal(parseLbVip('10.0.0.10:80', '[fd00::2]:80'), undefined, 'a backend of the other family drops the VIP');
  t.equal(parseLbVip('10.0.0.10:80', '10.0.0.2:8080,junk'), undefined, 'one unreadable backend drops the VIP');
  const lb = parseLoadBalancer(loadBalancer(lbUuid, { 'nonsense': 'x', '10.0.0.10:80': '10.0.0.2:80', '^vip:80': '^backends' }, {
    options: { hairpin_snat_ip: '169.254.0.1/32 fd00::ff garbage 169.254.0.2', hairpin_orig_tuple: 'TRUE' },
  }) as unknown as sb.Load_Balancer);
  t.equal(lb.vips.length, 1, 'unreadable and template VIPs are skipped, the rest kept');
  t.equal(lb.proto, 6, 'tcp by default');
  t.equal(lb.snatIp4, 0xa9fe0001n, 'the first IPv4 of hairpin_snat_ip');
  t.equal(lb.snatIp6, (0xfd00n << 112n) | 0xffn, 'the first IPv6');
  t.equal(lb.origTuple, true, 'hairpin_orig_tuple is a boolean option, any case');
  t.equal(parseLoadBalancer(loadBalancer(lbUuid, {}, { options: { hairpin_snat_ip: 'garbage' } }) as unknown as sb.Load_Balancer).snatIp4, undefined, 'unreadable hairpin_snat_ip is none');
});

t.test('original tuple in registers, ct_mark.natted, one table-70 flow per VIP', async (t) => {
  t.same(flows({ '10.0.0.10:80': '10.0.0.2:8080,10.0.0.3:8080', '10.0.0.11': '10.0.0.4' }, { datapaths: [sw0], options: { hairpin_orig_tuple: 'true' } }), [
    'table=68, priority=100, cookie=0xa0b0c0d, reg1=0xa00000a,reg2=0x50/0xffff,ct_mark=0x2/0x2,dl_type=0x800,nw_proto=6,nw_src=10.0.0.2,nw_dst=10.0.0.2,tcp_dst=8080 actions=load:0x1->NXM_NX_REG10[7],learn(table=69,delete_learned,cookie=0xa0b0c0d,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.10,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],load:0x1->NXM_NX_REG10[7])',
    'table=68, priority=100, cookie=0xa0b0c0d, reg1=0xa00000a,reg2=0x50/0xffff,ct_mark=0x2/0x2,dl_type=0x800,nw_proto=6,nw_src=10.0.0.3,nw_dst=10.0.0.3,tcp_dst=8080 actions=load:0x1->NXM_NX_REG10[7],learn(table=69,delete_learned,cookie=0xa0b0c0d,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.10,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],load:0x1->NXM_NX_REG10[7])',
    'table=68, priority=100, cookie=0xa0b0c0d, reg1=0xa00000b,ct_mark=0x2/0x2,dl_type=0x800,nw_src=10.0.0.4,nw_dst=10.0.0.4 actions=load:0x1->NXM_NX_REG10[7],learn(table=69,delete_learned,cookie=0xa0b0c0d,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.11,NXM_OF_IP_PROTO[],load:0x1->NXM_NX_REG10[7])',
    'table=70, priority=100, cookie=0xa0b0c0d, reg1=0xa00000a,reg2=0x50/0xffff,dl_type=0x800,nw_proto=6 actions=ct(commit,zone=NXM_NX_REG12[0..15],nat(src=10.0.0.10))',
    'table=70, priority=90, cookie=0xa0b0c0d, reg1=0xa00000b,dl_type=0x800 actions=ct(commit,zone=NXM_NX_REG12[0..15],nat(src=10.0.0.11))',
  ]);
});

t.test('conntrack original tuple, ct_label.natted, hairpin_snat_ip per local datapath', async (t) => {
  const out = flows({ '[fd00::10]:53': '[fd00::2]:5353' }, { datapaths: [sw0], group, protocol: 'udp', options: { hairpin_snat_ip: '169.254.0.1 fd00::ff' } }, false);
  t.same(out, [
    'table=68, priority=100, cookie=0xa0b0c0d, ct_state=+trk+dnat,ct_label=0x2/0x2,dl_type=0x86dd,nw_proto=17,ipv6_src=fd00::2,ipv6_dst=fd00::2,udp_dst=5353,ct_ipv6_dst=0xfd000000000000000000000000000010,ct_nw_proto=0x11/0xff,ct_tp_dst=0x35/0xffff actions=load:0x1->NXM_NX_REG10[7],learn(table=69,delete_learned,cookie=0xa0b0c0d,OXM_OF_METADATA[],eth_type=0x86dd,NXM_NX_IPV6_SRC[],ipv6_dst=fd00::ff,nw_proto=17,NXM_OF_UDP_SRC[]=NXM_OF_UDP_DST[],load:0x1->NXM_NX_REG10[7])',
    // sw0 (own) and sw1 (through the group) are local; sw2 is not.
    'table=70, priority=200, cookie=0xa0b0c0d, metadata=0x1,ct_state=+trk+dnat,dl_type=0x86dd,nw_proto=17,ct_ipv6_dst=0xfd000000000000000000000000000010,ct_nw_proto=0x11/0xff,ct_tp_dst=0x35/0xffff actions=ct(commit,zone=NXM_NX_REG12[0..15],nat(src=fd00::ff))',
    'table=70, priority=200, cookie=0xa0b0c0d, metadata=0x2,ct_state=+trk+dnat,dl_type=0x86dd,nw_proto=17,ct_ipv6_dst=0xfd000000000000000000000000000010,ct_nw_proto=0x11/0xff,ct_tp_dst=0x35/0xffff actions=ct(commit,zone=NXM_NX_REG12[0..15],nat(src=fd00::ff))',
  ]);
  t.same(flows({ '10.0.0.10:80': '10.0.0.2:80' }, { datapaths: [sw2] }), [], 'a load balancer on no local datapath has no flows');
  t.same(flows({ '10.0.0.10:80': '10.0.0.2:80' }, { group: U(9, 0xf) }), [], 'nor one on a group this chassis has not received');
  t.same(flows({ 'x:1': 'y', '10.0.0.10:80': '10.0.0.2' }, { datapaths: [sw0] }), [], 'bad VIPs: no flows, no failure');
});
