// Goal: the BFD control packets the agent sends are what ovn-controller 23.03 sends (RFC 5880
// fields, microsecond intervals, IPv4 with no UDP checksum, IPv6 with one, broadcast from the
// port's MAC, TTL 255), its packet-out enters the router as from the port, and every check of the
// receive path drops the packet it names — and only that one.
// Method: build packets with the codec, read them back with the generic frame parser, and break
// a good packet one field at a time.

import t from 'tap';
import { parseIpv6 } from '../../agent/expr/lexer.js';
import { encodeActions } from '../../agent/openflow/actions.js';
import {
  BFD_DEST_PORT, BFD_FLAG, BFD_PACKET_BYTES, BFD_STATE, bfdPacketOut, composeBfdPacket, decodeBfdControl, encodeBfdControl, parseBfdMessage,
  type BfdEndpoints, type BfdRejectReason, type BfdTx,
} from '../../agent/pinctrl/bfd-packet.js';
import {
  ETH_TYPE, IP_PROTO, buildEthernet, buildIpv4, buildUdp, isPacketError, parseFrame, parseIpv4, udp6ChecksumOk, type Frame,
} from '../../agent/pinctrl/packet.js';

const ip4 = (s: string): number => parseIpv4(s) as number;
const ip6 = (s: string): bigint => parseIpv6(s) as bigint;

const v4: BfdEndpoints = { srcMac: '00:00:00:00:ff:01', src: { kind: 'ipv4', v: ip4('172.16.0.1') }, dst: { kind: 'ipv4', v: ip4('172.16.0.254') }, srcPort: 49152 };
const v6: BfdEndpoints = { srcMac: '00:00:00:00:ff:01', src: { kind: 'ipv6', v: ip6('fd00::1') }, dst: { kind: 'ipv6', v: ip6('fd00::fe') }, srcPort: 49153 };
const tx: BfdTx = { state: BFD_STATE.INIT, final: false, mult: 3, myDisc: 0x01020304, yourDisc: 0xa0b0c0d0, minTxMs: 300, minRxMs: 250 };

function frameOf(b: Buffer): Frame {
  const f = parseFrame(b);
  if (isPacketError(f)) throw new Error(f.message);
  return f;
}

t.test('a control packet: the fields of RFC 5880 §4.1 as ovn-controller fills them', async (t) => {
  const b = encodeBfdControl(tx);
  t.equal(b.length, BFD_PACKET_BYTES);
  t.equal(b[0], 0x20, 'version 1 in the top three bits, diagnostic 0');
  t.equal(b[1], 0x80, 'state init in the top two bits, no flags');
  t.same(decodeBfdControl(b), {
    version: 1, diag: 0, state: BFD_STATE.INIT, flags: 0, mult: 3, length: 24, myDisc: 0x01020304, yourDisc: 0xa0b0c0d0,
    minTxUs: 300_000, minRxUs: 250_000, minEchoRxUs: 0,
  }, 'round trip; the intervals in microseconds, no echo');
  t.equal(encodeBfdControl({ ...tx, state: BFD_STATE.UP, final: true })[1], 0xd0, 'up with the final bit');
  t.equal(encodeBfdControl({ ...tx, state: BFD_STATE.ADMIN_DOWN })[1], 0x00, 'admin_down is state 0');
  t.equal(decodeBfdControl(encodeBfdControl({ ...tx, myDisc: 2 ** 32 + 7 })).myDisc, 7, 'a discriminator past 32 bits keeps its low 32, as htonl does');
  t.equal(decodeBfdControl(encodeBfdControl({ ...tx, minTxMs: 5_000_000 })).minTxUs, (5_000_000_000 % 2 ** 32), 'the microseconds wrap in 32 bits as in ovn-controller');
});

t.test('IPv4 framing: broadcast from the port, TOS 0, DF, TTL 255, UDP to 3784 without checksum', async (t) => {
  const f = frameOf(composeBfdPacket(v4, encodeBfdControl(tx)));
  t.same([f.eth.dst, f.eth.src, f.eth.ethType], ['ff:ff:ff:ff:ff:ff', '00:00:00:00:ff:01', ETH_TYPE.IPV4]);
  const h = f.ipv4;
  if (h === undefined) throw new Error('no IPv4');
  t.same([h.tos, h.id, h.flagsFragment, h.ttl, h.protocol, h.src, h.dst, h.checksumOk], [0, 0, 0x4000, 255, IP_PROTO.UDP, ip4('172.16.0.1'), ip4('172.16.0.254'), true]);
  t.same(f.udp, { srcPort: 49152, dstPort: BFD_DEST_PORT, length: 8 + 24, checksum: 0 });
  t.same(decodeBfdControl((f.l4 as Buffer).subarray(8)), decodeBfdControl(encodeBfdControl(tx)), 'the control packet after the UDP header');
});

t.test('IPv6 framing: hop limit 255 and a UDP checksum that verifies', async (t) => {
  const f = frameOf(composeBfdPacket(v6, encodeBfdControl(tx)));
  const h = f.ipv6;
  if (h === undefined) throw new Error('no IPv6');
  t.same([f.eth.dst, f.eth.ethType, h.trafficClass, h.flowLabel, h.hopLimit, h.nextHeader, h.src, h.dst], ['ff:ff:ff:ff:ff:ff', ETH_TYPE.IPV6, 0, 0, 255, IP_PROTO.UDP, ip6('fd00::1'), ip6('fd00::fe')]);
  t.equal(f.udp?.dstPort, BFD_DEST_PORT);
  t.not(f.udp?.checksum, 0, 'a checksum is present');
  t.ok(udp6ChecksumOk(f.l4 as Buffer, h.src, h.dst), 'and it is right');
  t.throws(() => composeBfdPacket({ ...v6, dst: v4.dst }, encodeBfdControl(tx)), 'mixed families are a programmer error');
});

t.test('the packet-out enters the router as from the port: metadata, reg14, resubmit to table 8', async (t) => {
  const packet = composeBfdPacket(v4, encodeBfdControl(tx));
  const out = bfdPacketOut({ dpKey: 7, portKey: 3 }, packet);
  t.same(out.actions, [
    { kind: 'set_field', field: 'metadata', value: 7n },
    { kind: 'set_field', field: 'reg14', value: 3n },
    { kind: 'resubmit', table: 8, inPort: 0xfffd },
  ]);
  t.equal(out.inPort, 0xfffffffd, 'in_port CONTROLLER');
  t.equal(out.bufferId, 0xffffffff);
  t.equal(out.data, packet);
  t.doesNotThrow(() => encodeActions(out.actions), 'the actions encode');
});

/** A peer's packet: the control fields as given, in IPv4 (or IPv6) and UDP to `dstPort`. */
function peerPacket(control: Buffer, o: { dstPort?: number; v6?: boolean; protocol?: number } = {}): Buffer {
  if (o.v6 === true) return composeBfdPacket({ ...v6, src: v6.dst, dst: v6.src, srcPort: 49999 }, control);
  const udp = buildUdp({ srcPort: 49999, dstPort: o.dstPort ?? BFD_DEST_PORT }, control);
  const ip = buildIpv4({ tos: 0, id: 0, flagsFragment: 0, ttl: 255, protocol: o.protocol ?? IP_PROTO.UDP, src: ip4('172.16.0.254'), dst: ip4('172.16.0.1') }, udp);
  return buildEthernet({ dst: '00:00:00:00:ff:01', src: '00:00:00:00:ee:01', ethType: ETH_TYPE.IPV4 }, ip);
}

const good = (): Buffer => encodeBfdControl({ state: BFD_STATE.UP, final: false, mult: 3, myDisc: 0x1111, yourDisc: 0x2222, minTxMs: 300, minRxMs: 300 });
/** A good control packet with one byte changed. */
const withByte = (at: number, v: number | ((old: number) => number)): Buffer => {
  const b = good();
  b[at] = typeof v === 'function' ? v(b[at] as number) : v;
  return b;
};
const withWord = (at: number, v: number): Buffer => {
  const b = good();
  b.writeUInt32BE(v, at);
  return b;
};

t.test('the receive checks: a good packet passes, each broken field is dropped for its own reason', async (t) => {
  const ok = parseBfdMessage(peerPacket(good()));
  t.match(ok, { kind: 'message', src: '172.16.0.254', control: { state: BFD_STATE.UP, myDisc: 0x1111, yourDisc: 0x2222, minTxUs: 300_000, mult: 3 } });
  t.match(parseBfdMessage(peerPacket(good(), { v6: true })), { kind: 'message', src: 'fd00::fe' }, 'IPv6 too, its source in RFC 5952 form');

  const arp = buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: '00:00:00:00:ee:01', ethType: ETH_TYPE.ARP }, Buffer.alloc(28));
  const cases: [string, Buffer, BfdRejectReason][] = [
    ['not IP', arp, 'not_ip'],
    ['a TCP segment', peerPacket(Buffer.alloc(24), { protocol: IP_PROTO.TCP }), 'not_udp'],
    ['UDP to another port', peerPacket(good(), { dstPort: 3785 }), 'not_bfd_port'],
    ['a short datagram', peerPacket(good().subarray(0, 20)), 'truncated'],
    ['version 0', peerPacket(withByte(0, 0x00)), 'version'],
    ['version 2', peerPacket(withByte(0, 0x40)), 'version'],
    ['authentication', peerPacket(withByte(1, (x) => x | BFD_FLAG.AUTH)), 'auth'],
    ['length 23', peerPacket(withByte(3, 23)), 'length'],
    ['multiplier 0', peerPacket(withByte(2, 0)), 'mult'],
    ['multipoint', peerPacket(withByte(1, (x) => x | BFD_FLAG.MULTIPOINT)), 'multipoint'],
    ['my_disc 0', peerPacket(withWord(4, 0)), 'my_disc'],
    ['final and poll', peerPacket(withByte(1, (x) => x | BFD_FLAG.FINAL | BFD_FLAG.POLL)), 'final_and_poll'],
    ['up with your_disc 0', peerPacket(withWord(8, 0)), 'your_disc'],
    ['init with your_disc 0', peerPacket((() => { const b = withWord(8, 0); b[1] = BFD_STATE.INIT << 6; return b; })()), 'your_disc'],
  ];
  for (const [what, packet, reason] of cases) t.match(parseBfdMessage(packet), { kind: 'reject', reason }, what);
  // What the checks allow must pass: each rule drops only what it names.
  const down0 = withWord(8, 0);
  down0[1] = BFD_STATE.DOWN << 6;
  t.match(parseBfdMessage(peerPacket(down0)), { kind: 'message' }, 'down with your_disc 0 is allowed');
  const adminDown0 = withWord(8, 0);
  adminDown0[1] = BFD_STATE.ADMIN_DOWN << 6;
  t.match(parseBfdMessage(peerPacket(adminDown0)), { kind: 'message' }, 'admin_down with your_disc 0 is allowed');
  t.match(parseBfdMessage(peerPacket(withByte(3, 48))), { kind: 'message' }, 'a length above 24 is allowed');
  t.match(parseBfdMessage(peerPacket(withByte(1, (x) => x | BFD_FLAG.POLL))), { kind: 'message', control: { flags: BFD_FLAG.POLL } }, 'a poll alone');
  t.match(parseBfdMessage(peerPacket(withByte(0, 0x3f))), { kind: 'message', control: { diag: 0x1f } }, 'any diagnostic');
  t.match(parseBfdMessage(peerPacket(Buffer.concat([good(), Buffer.alloc(8)]))), { kind: 'message' }, 'bytes after the 24 are ignored');
});

t.test('a malformed packet never throws', async (t) => {
  const base = peerPacket(good());
  let n = 0;
  for (let cut = 0; cut <= base.length; cut++) {
    const r = parseBfdMessage(base.subarray(0, cut));
    if (r.kind === 'reject') n++;
  }
  t.equal(n, base.length, 'every cut short packet is rejected (the whole one passes)');
  // Seeded byte mutations of a good packet: each one parses to a message or a rejection.
  let seed = 7;
  const outcomes = { message: 0, reject: 0 };
  for (let i = 0; i < 2000; i++) {
    const b = Buffer.from(base);
    for (let k = 0; k < 4; k++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      b[seed % b.length] = seed & 0xff;
    }
    outcomes[parseBfdMessage(b).kind]++;
  }
  t.equal(outcomes.message + outcomes.reject, 2000, 'no mutation throws');
  t.ok(outcomes.message > 0 && outcomes.reject > 0, `both outcomes occur (${outcomes.message} kept, ${outcomes.reject} rejected)`);
});
