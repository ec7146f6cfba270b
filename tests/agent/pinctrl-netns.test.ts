// Goal: a real Linux network stack accepts what pinctrl builds — the checksums, the quoted header
// of an ICMP error, a DHCP offer, a neighbor advertisement — not only our own parser.
// Method: a namespace host on a real netdev bridge; flows compiled from OVN actions send its UDP
// probe to icmp4 { }, its DHCPDISCOVER to put_dhcp_opts, its neighbor solicitation to nd_na { };
// the kernel's verdicts are the oracle: ECONNREFUSED on the UDP socket (a port unreachable the
// kernel matched to it), a DHCPOFFER read from a socket on port 68, a REACHABLE neighbor entry.

import t from 'tap';
import { compileActions } from '../../agent/actions/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { FlowSpec, MaskedValue, OfAction } from '../../agent/openflow/types.js';
import { Pinctrl } from '../../agent/pinctrl/index.js';
import { DHCP_MSG, buildDhcp, formatIpv4, isPacketError, parseDhcp, parseIpv4 } from '../../agent/pinctrl/packet.js';
import { createNsHost, netnsAvailable } from '../helpers/netns.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';

const skip = !ovsSwitchInstalled() ? 'Open vSwitch is not installed' : !netnsAvailable() ? 'needs root and iproute2 for network namespaces' : false;

const symtab = buildSymtab();
const ones = (bits: number): bigint => (1n << BigInt(bits)) - 1n;
const ex = (value: bigint, bits: number): MaskedValue => ({ value, mask: ones(bits) });
const M = (o: Record<string, MaskedValue>): Map<string, MaskedValue> => new Map(Object.entries(o));
const ip4 = (s: string): bigint => BigInt(parseIpv4(s) as number);
const flow = (table: number, priority: number, match: Map<string, MaskedValue>, actions: readonly OfAction[]): FlowSpec =>
  ({ table, priority, match, actions, cookie: BigInt(table * 1000 + priority) });
function actions(text: string, table = 0): OfAction[] {
  const r = compileActions(text, { symtab, pipeline: 'ingress', table, isSwitch: true, lookupPort: () => 1 });
  if ('error' in r) throw new Error(`${text}: ${r.error}`);
  return r.actions;
}

const HOST_MAC = '52:54:00:c0:ff:ee';
const ROUTER_MAC = '0a:00:00:00:00:fe';
const IP4 = ex(0x800n, 16);
const UDP = ex(17n, 8);

const flows: FlowSpec[] = [
  flow(0, 100, M({ in_port: ex(1n, 32) }), [
    { kind: 'set_field', field: 'metadata', value: 1n }, { kind: 'set_field', field: 'reg14', value: 1n }, { kind: 'resubmit', table: 8 },
  ]),
  // A UDP probe to 10.0.0.1:9 is refused by icmp4 { } (what a reject ACL does).
  flow(8, 100, M({ eth_type: IP4, ip_proto: UDP, ipv4_dst: ex(ip4('10.0.0.1'), 32), udp_dst: ex(9n, 16) }),
    actions('icmp4 { eth.dst <-> eth.src; ip4.dst <-> ip4.src; ip.ttl = 255; outport = inport; output; };')),
  // ls_in_dhcp_options, then ls_in_dhcp_response.
  flow(8, 80, M({ eth_type: IP4, ip_proto: UDP, udp_src: ex(68n, 16), udp_dst: ex(67n, 16) }),
    actions('reg0[3] = put_dhcp_opts(offerip = 10.0.0.50, router = 10.0.0.1, netmask = 255.255.255.0, lease_time = 3600, server_id = 10.0.0.1); next;')),
  flow(9, 100, M({ reg0: { value: 8n, mask: 8n }, eth_type: IP4, ip_proto: UDP, udp_src: ex(68n, 16), udp_dst: ex(67n, 16) }),
    actions(`eth.dst = eth.src; eth.src = ${ROUTER_MAC}; ip4.src = 10.0.0.1; udp.src = 67; udp.dst = 68; outport = inport; flags.loopback = 1; output;`, 1)),
  // ls_in_arp_rsp for IPv6: answer the solicitation for fd00::1.
  flow(8, 70, M({ eth_type: ex(0x86ddn, 16), ip_proto: ex(58n, 8), icmpv6_type: ex(135n, 8), icmpv6_code: ex(0n, 8), nd_target: ex(0xfd000000000000000000000000000001n, 128) }),
    actions(`nd_na { eth.src = ${ROUTER_MAC}; ip6.src = fd00::1; nd.target = fd00::1; nd.tll = ${ROUTER_MAC}; outport = inport; flags.loopback = 1; output; };`)),
  // "output": back out of the host's port. A resumed packet still comes in on port 1, and
  // OpenFlow sends to the ingress port only as IN_PORT (OVN's table 65 clears in_port instead).
  flow(37, 10, M({ in_port: ex(1n, 32) }), [{ kind: 'output', port: 0xfffffff8 }]),
  flow(37, 0, M({}), [{ kind: 'output', port: 1 }]),
];

/** Python in the namespace: one UDP datagram to 10.0.0.1:9 on a connected socket, then a read. */
const udpProbe = `
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.connect(('10.0.0.1', 9))
s.send(b'probe')
try:
    s.recv(100)
    print('answered')
except ConnectionRefusedError:
    print('refused')
except socket.timeout:
    print('timeout')
`;

/** Python in the namespace: sends the DHCP message given in hex from port 68, prints the reply in hex. */
const dhcpClient = `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b'eth0')
s.bind(('0.0.0.0', 68))
s.settimeout(5)
s.sendto(bytes.fromhex(sys.argv[1]), ('255.255.255.255', 67))
try:
    data, peer = s.recvfrom(2048)
    print(peer[0], peer[1], data.hex())
except socket.timeout:
    print('timeout')
`;

t.test('the kernel accepts pinctrl\'s ICMP error, DHCP offer and neighbor advertisement', { skip }, async (t) => {
  const sw = await startOvsSwitch({ realDevices: true });
  t.teardown(() => sw.stop());
  const host = await createNsHost({ mac: HOST_MAC, cidr: '10.0.0.50/24' });
  t.teardown(() => host.remove());
  await sw.vsctl('add-port', sw.bridge, host.peer, '--', 'set', 'interface', host.peer, 'ofport_request=1');
  // The router is known, so the probe needs no ARP (arp { } answers are flows in OVN, not pinctrl).
  await host.exec('ip', 'neigh', 'replace', '10.0.0.1', 'lladdr', ROUTER_MAC, 'dev', 'eth0');

  const late: { pinctrl?: Pinctrl } = {};
  const ch = await OfChannel.connect({
    target: sw.mgmtTarget, packetIn2: true,
    onMessage: (m) => { if (m.kind === 'packet_in2') late.pinctrl?.handlePacketIn(m); },
  });
  t.teardown(() => ch.close());
  const pinctrl = new Pinctrl({
    channel: ch, sb: { transact: async () => [] },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
  });
  late.pinctrl = pinctrl;
  t.teardown(() => pinctrl.close());
  await ch.installBatch(flows.map((f) => ({ command: 'add' as const, ...f })));

  t.test('icmp4 { } on a UDP probe: the socket gets ECONNREFUSED', async (t) => {
    const out = (await host.exec('python3', '-c', udpProbe)).trim();
    t.equal(out, 'refused', 'a port unreachable with right checksums, quoting the probe the socket sent');
    t.ok(pinctrl.stats.packetOuts >= 1);
  });

  t.test('put_dhcp_opts: a DHCPDISCOVER from port 68 is answered with an OFFER', async (t) => {
    const chaddr = Buffer.alloc(16);
    Buffer.from(HOST_MAC.replace(/:/g, ''), 'hex').copy(chaddr);
    const discover = buildDhcp({
      op: 1, htype: 1, hlen: 6, hops: 0, xid: 0x1234abcd, secs: 0, flags: 0, ciaddr: 0, yiaddr: 0, siaddr: 0, giaddr: 0, chaddr,
      sname: Buffer.alloc(64), file: Buffer.alloc(128), options: [{ code: 53, data: Buffer.from([DHCP_MSG.DISCOVER]) }],
    });
    const out = (await host.exec('python3', '-c', dhcpClient, discover.toString('hex'))).trim();
    t.not(out, 'timeout', 'a reply reached the socket');
    const [peer, port, hexData] = out.split(' ');
    t.same([peer, port], ['10.0.0.1', '67'], 'from the server address and port the response flow set');
    const d = parseDhcp(Buffer.from(hexData ?? '', 'hex'));
    if (isPacketError(d)) throw new Error(d.message);
    t.same({ op: d.op, xid: d.xid, yiaddr: formatIpv4(d.yiaddr) }, { op: 2, xid: 0x1234abcd, yiaddr: '10.0.0.50' });
    t.same(d.options.map((o) => [o.code, o.data.toString('hex')]), [[53, '02'], [3, '0a000001'], [1, 'ffffff00'], [51, '00000e10'], [54, '0a000001']]);
  });

  t.test('nd_na { }: the kernel takes the advertisement and marks the neighbor reachable', async (t) => {
    await host.exec('ip', '-6', 'addr', 'add', 'fd00::5/64', 'dev', 'eth0', 'nodad');
    let neigh = '';
    for (let i = 0; i < 10 && !/lladdr/.test(neigh); i++) {
      await host.ping('fd00::1', 1);
      neigh = await host.exec('ip', '-6', 'neigh', 'show', 'fd00::1', 'dev', 'eth0');
    }
    t.match(neigh, new RegExp(`lladdr ${ROUTER_MAC}`), 'the NA was accepted: checksum, hop limit, flags, target option');
    t.match(neigh, /REACHABLE|STALE|DELAY|PROBE/, neigh.trim());
  });
});
