// Goal: no bytes make the pinctrl parsers or the packet-in decision throw or hang, every error is
// one of the named kinds, and what the builders write parses back to what they were given.
// Method: seeded random valid frames of every kind (DNS queries and DHCPv6 messages among them),
// cut at every length, with random byte flips, and pure garbage; packet-ins with random userdata
// and metadata go through decidePacketIn, with DNS records for some datapaths.
// OVNTS_SEED replays a run; OVNTS_FUZZ scales it (OVNTS_LONG: ten times).

import t from 'tap';
import { ACTION_OPCODE } from '../../agent/compile/tables.js';
import { encodeActions } from '../../agent/openflow/actions.js';
import { encodeMessage } from '../../agent/openflow/messages.js';
import { decidePacketIn, ignoreReasons } from '../../agent/pinctrl/handlers.js';
import {
  ETH_TYPE, IP_PROTO, buildArp, buildDhcp, buildEthernet, buildIcmp4, buildIcmp6, buildIpv4, buildIpv6, buildNdBody, buildUdp,
  isPacketError, macFromBytes, packetErrorKinds, parseArp, parseDhcp, parseFrame, parseNd, type DhcpOptionTlv,
} from '../../agent/pinctrl/packet.js';
import { Rng } from '../helpers/seeded-rng.js';

const seed = Number(process.env.OVNTS_SEED ?? 8008);
const scale = Number(process.env.OVNTS_FUZZ ?? (process.env.OVNTS_LONG ? 10 : 1));
/** A hang detector, not a speed test. */
const callMsMax = 1000;

const bytes = (rng: Rng, n: number): Buffer => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = rng.int(0, 255);
  return b;
};
const mac = (rng: Rng): string => macFromBytes(bytes(rng, 6));

function randomFrame(rng: Rng, kind = rng.int(0, 7)): Buffer {
  const eth = { dst: mac(rng), src: mac(rng), ...(rng.int(0, 3) === 0 ? { vlanTci: rng.int(0, 0xffff) } : {}) };
  const v4 = (protocol: number, payload: Buffer): Buffer => buildEthernet({ ...eth, ethType: ETH_TYPE.IPV4 },
    buildIpv4({ tos: rng.int(0, 255), id: rng.int(0, 0xffff), flagsFragment: rng.pick([0, 0x4000, 0x2000, 0x0010]), ttl: rng.int(0, 255), protocol, src: rng.u32(), dst: rng.u32() }, payload));
  const v6 = (nextHeader: number, payload: Buffer): Buffer => buildEthernet({ ...eth, ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: rng.int(0, 255), flowLabel: rng.int(0, 0xfffff), nextHeader, hopLimit: 255, src: BigInt(rng.u32()), dst: BigInt(rng.u32()) }, payload));
  switch (kind) {
    case 6: {
      const payload = randomDnsQuery(rng);
      return rng.int(0, 1) === 0 ? v4(IP_PROTO.UDP, buildUdp({ srcPort: rng.int(1024, 0xffff), dstPort: 53 }, payload)) : v6(IP_PROTO.UDP, buildUdp({ srcPort: 5353, dstPort: 53 }, payload));
    }
    case 7: return v6(IP_PROTO.UDP, buildUdp({ srcPort: 546, dstPort: 547 }, randomDhcpv6(rng)));
    case 0: return buildEthernet({ ...eth, ethType: ETH_TYPE.ARP }, buildArp({ op: rng.int(1, 2), sha: mac(rng), spa: rng.u32(), tha: mac(rng), tpa: rng.u32() }));
    case 1: return v4(IP_PROTO.ICMP, buildIcmp4({ type: rng.int(0, 20), code: rng.int(0, 5), rest: rng.u32() }, bytes(rng, rng.int(0, 64))));
    case 2: return v4(IP_PROTO.UDP, buildUdp({ srcPort: 68, dstPort: 67 }, randomDhcp(rng)));
    case 3: return v4(IP_PROTO.TCP, bytes(rng, rng.int(0, 40)));
    case 4: {
      const target = BigInt(rng.u32()) << 64n;
      const type = rng.pick([135, 136] as const);
      return v6(IP_PROTO.ICMPV6, buildIcmp6({ type, code: 0 }, buildNdBody({ type, flags: 0, target, sll: mac(rng) }), 1n, 2n));
    }
    default: return v6(IP_PROTO.UDP, buildUdp({ srcPort: rng.int(0, 0xffff), dstPort: rng.int(0, 0xffff) }, bytes(rng, rng.int(0, 30))));
  }
}

const dnsNames = ['vm1.ovn.org', 'Vm1.ovn.org', 'vm2.ovn.org', '1.0.0.10.in-addr.arpa', 'x', ''];

function randomDnsQuery(rng: Rng): Buffer {
  const head = bytes(rng, 12);
  head[2] = rng.pick([0x01, 0x01, 0x81, rng.int(0, 255)]);
  head.writeUInt16BE(rng.pick([1, 1, 0, 2]), 4);
  head.writeUInt16BE(rng.pick([0, 0, 0, 1]), 10);
  const name = rng.pick(dnsNames);
  const labels = name === '' ? [] : name.split('.');
  const qname = Buffer.concat([...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])), Buffer.alloc(1)]);
  const tail = Buffer.from([0, rng.pick([1, 1, 28, 255, 12, 15]), 0, 1]);
  return Buffer.concat([head, qname, tail, bytes(rng, rng.pick([0, 0, rng.int(1, 20)]))]);
}

function randomDhcpv6(rng: Rng): Buffer {
  const opts: Buffer[] = [];
  for (let i = rng.int(0, 4); i > 0; i--) {
    const code = rng.pick([1, 3, 3, 6, 8, 39, rng.int(0, 0xffff)]);
    const data = code === 3 ? bytes(rng, rng.pick([12, 40, 2])) : bytes(rng, rng.int(0, 14));
    const h = Buffer.alloc(4);
    h.writeUInt16BE(code, 0);
    h.writeUInt16BE(rng.int(0, 9) === 0 ? rng.int(0, 0xffff) : data.length, 2);
    opts.push(h, data);
  }
  return Buffer.concat([Buffer.from([rng.pick([1, 3, 4, 5, 9, 11, rng.int(0, 255)])]), bytes(rng, 3), ...opts]);
}

function randomOptions(rng: Rng): DhcpOptionTlv[] {
  const opts: DhcpOptionTlv[] = [{ code: 53, data: Buffer.from([rng.int(0, 9)]) }];
  for (let i = rng.int(0, 6); i > 0; i--) opts.push({ code: rng.int(1, 254), data: bytes(rng, rng.int(0, 12)) });
  return opts;
}

function randomDhcp(rng: Rng): Buffer {
  return buildDhcp({
    op: rng.int(1, 2), htype: 1, hlen: 6, hops: 0, xid: rng.u32(), secs: 0, flags: rng.pick([0, 0x8000]), ciaddr: rng.u32(), yiaddr: 0,
    siaddr: rng.u32(), giaddr: 0, chaddr: bytes(rng, 16), sname: Buffer.alloc(64), file: Buffer.alloc(128), options: randomOptions(rng),
  });
}

/** Flips, cuts, and length-field pokes. */
function mutate(rng: Rng, b: Buffer): Buffer {
  const out = Buffer.from(b);
  for (let i = rng.int(1, 4); i > 0 && out.length > 0; i--) {
    const at = rng.int(0, out.length - 1);
    out[at] = rng.int(0, 3) === 0 ? rng.pick([0, 0xff, 0x80, 0x01]) : rng.int(0, 255);
  }
  return rng.int(0, 2) === 0 ? out.subarray(0, rng.int(0, out.length)) : out;
}

interface Tally { ok: number; typed: number; bad: string[]; slowestMs: number }

function attempt(tally: Tally, label: string, f: () => unknown): void {
  const t0 = performance.now();
  try {
    const r = f();
    if (isPacketError(r)) {
      if ((packetErrorKinds as readonly string[]).includes(r.error)) tally.typed++;
      else tally.bad.push(`${label}: unknown error kind ${r.error}`);
    } else {
      tally.ok++;
    }
  } catch (e) {
    tally.bad.push(`${label}: threw ${e instanceof Error ? e.stack : String(e)}`);
  }
  tally.slowestMs = Math.max(tally.slowestMs, performance.now() - t0);
}

t.test(`parsers never throw (seed ${seed})`, async (t) => {
  const rng = new Rng(seed);
  const tally: Tally = { ok: 0, typed: 0, bad: [], slowestMs: 0 };
  for (let n = 0; n < 400 * scale; n++) {
    const frame = randomFrame(rng);
    // Every cut of the first frames, then random mutations.
    const inputs = n < 20 ? Array.from({ length: frame.length + 1 }, (_, i) => frame.subarray(0, i)) : [mutate(rng, frame), bytes(rng, rng.int(0, 400))];
    for (const input of inputs) {
      attempt(tally, `frame ${input.toString('hex')}`, () => parseFrame(input));
      attempt(tally, `dhcp ${input.toString('hex')}`, () => parseDhcp(input.subarray(42)));
      attempt(tally, `nd ${input.toString('hex')}`, () => parseNd(input.subarray(54)));
      attempt(tally, `arp ${input.toString('hex')}`, () => parseArp(input.subarray(14)));
    }
  }
  t.same(tally.bad.slice(0, 3), [], 'no throws, no unknown error kinds');
  t.ok(tally.ok > 0 && tally.typed > 0, `both outcomes seen (${tally.ok} parsed, ${tally.typed} refused)`);
  t.ok(tally.slowestMs < callMsMax, `slowest call ${tally.slowestMs.toFixed(1)} ms`);
});

t.test(`what is built parses back (seed ${seed})`, async (t) => {
  const rng = new Rng(seed + 1);
  let checked = 0;
  for (let n = 0; n < 300 * scale; n++) {
    const a = { op: rng.int(0, 0xffff), sha: mac(rng), spa: rng.u32(), tha: mac(rng), tpa: rng.u32() };
    const arp = parseArp(buildArp(a));
    const d = {
      op: rng.int(0, 255), htype: rng.int(0, 255), hlen: rng.int(0, 255), hops: rng.int(0, 255), xid: rng.u32(), secs: rng.int(0, 0xffff),
      flags: rng.int(0, 0xffff), ciaddr: rng.u32(), yiaddr: rng.u32(), siaddr: rng.u32(), giaddr: rng.u32(), chaddr: bytes(rng, 16),
      sname: bytes(rng, 64), file: bytes(rng, 128), options: randomOptions(rng),
    };
    const dhcp = parseDhcp(buildDhcp(d));
    if (isPacketError(arp) || isPacketError(dhcp)) {
      t.fail(`a built packet did not parse: ${JSON.stringify(arp)} ${JSON.stringify(dhcp)}`);
      return;
    }
    if (JSON.stringify(arp) !== JSON.stringify(a) || JSON.stringify({ ...dhcp, optionsCut: undefined }) !== JSON.stringify({ ...d, optionsCut: undefined })) {
      t.fail(`round trip differs at iteration ${n}`);
      return;
    }
    checked++;
  }
  t.equal(checked, 300 * scale);
});

/** Userdata options of a stateful put_dhcpv6_opts: ia_addr, dns_server, domain_search, server_id. */
const dhcpv6Tlvs = Buffer.from('00050010ae70000000000000000000000000000400170010ae7000000000000000000000000000010018000361626300020006000000001002', 'hex');
/** Records on the datapaths with an even tunnel key (the fuzzed metadata is random or masked away). */
const dnsContext = {
  dnsRecords: (dpKey: number) => (dpKey % 2 === 1 ? [] : [new Map([['vm1.ovn.org', '10.0.0.1 fd00::1'], ['vm2.ovn.org', 'bad'], ['1.0.0.10.in-addr.arpa', 'vm1.ovn.org.']])]),
};

t.test(`decidePacketIn never throws, and what it sends encodes (seed ${seed})`, async (t) => {
  const rng = new Rng(seed + 2);
  const opcodes = Object.values(ACTION_OPCODE);
  const nested = encodeActions([{ kind: 'set_field', field: 'eth_dst', value: 0xffffffffffffn }, { kind: 'resubmit', table: 37 }]);
  const bad: string[] = [];
  const kinds = new Map<string, number>();
  const answered = { dns: 0, dhcpv6: 0 };
  for (let n = 0; n < 3000 * scale; n++) {
    // One in four is a DNS or DHCPv6 packet-in shaped as the flows make them, to reach the answers.
    const focus = rng.int(0, 3) === 0 ? rng.pick(['dns', 'dhcpv6'] as const) : undefined;
    const opcode = focus === 'dns' ? ACTION_OPCODE.DNS_LOOKUP : focus === 'dhcpv6' ? ACTION_OPCODE.PUT_DHCPV6_OPTS
      : rng.int(0, 5) === 0 ? rng.int(0, 40) : rng.pick(opcodes);
    const head = Buffer.alloc(8);
    head.writeUInt32BE(opcode, 0);
    const args = focus !== undefined ? Buffer.concat([Buffer.from('00010e04', 'hex'), Buffer.from([0, 0, 0, rng.int(0, 31)]), focus === 'dhcpv6' ? dhcpv6Tlvs : Buffer.alloc(0)]) : rng.pick([
      () => nested, () => bytes(rng, rng.int(0, 40)), () => mutate(rng, nested),
      () => Buffer.concat([Buffer.from('00010e04', 'hex'), Buffer.alloc(4), bytes(rng, 4), Buffer.from('0304', 'hex'), bytes(rng, rng.int(0, 8))]),
      // A result bit, then DHCPv6 TLVs of put_dhcpv6_opts (or garbage after it).
      () => Buffer.concat([Buffer.from('00010e04', 'hex'), Buffer.from([0, 0, 0, rng.int(0, 40)]), rng.pick([dhcpv6Tlvs, bytes(rng, rng.int(0, 30))]), rng.int(0, 5) === 0 ? bytes(rng, 3) : Buffer.alloc(0)]),
    ])();
    const userdata = rng.int(0, 20) === 0 ? bytes(rng, rng.int(0, 10)) : Buffer.concat([head, args]);
    const metadata = new Map([
      ['metadata', { value: BigInt(rng.u32()), mask: rng.pick([0n, 0xffffffffffffffffn]) }],
      [`xreg${rng.int(0, 7)}`, { value: BigInt(rng.u32()) << 16n, mask: rng.pick([0xffffffffn, 0xffffffff00000000n, 0xffffffffffffffffn]) }],
      [`reg${rng.int(0, 15)}`, { value: BigInt(rng.u32()), mask: 0xffffffffn }],
    ]);
    const frame = focus === 'dns' ? randomFrame(rng, 6) : focus === 'dhcpv6' ? randomFrame(rng, 7) : randomFrame(rng);
    const packet = rng.int(0, 1) === 0 ? mutate(rng, frame) : frame;
    const pin = {
      packet, userdata, metadata, reason: rng.pick([1, 1, 1, 0]),
      ...(rng.int(0, 3) === 0 ? {} : { continuation: bytes(rng, 16) }),
    };
    try {
      const d = decidePacketIn(pin, dnsContext);
      kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
      if (d.kind === 'resume' && d.result && d.opcode === ACTION_OPCODE.DNS_LOOKUP) answered.dns++;
      if (d.kind === 'resume' && d.result && d.opcode === ACTION_OPCODE.PUT_DHCPV6_OPTS) answered.dhcpv6++;
      if (d.kind === 'ignored' && !(ignoreReasons as readonly string[]).includes(d.reason)) bad.push(`unknown reason ${d.reason}`);
      // Whatever the decision sends must encode: the channel would throw otherwise.
      if (d.kind === 'packet_out' || d.kind === 'resume') encodeMessage(d.message, 1);
    } catch (e) {
      bad.push(`opcode ${opcode} userdata ${userdata.toString('hex')} packet ${packet.toString('hex')}: ${e instanceof Error ? e.stack : String(e)}`);
    }
  }
  t.same(bad.slice(0, 3), []);
  t.same([...kinds.keys()].sort(), ['activate', 'bind_vport', 'ignored', 'learn', 'packet_out', 'resume', 'svc_check'], `every kind of answer came up: ${JSON.stringify([...kinds])}`);
  t.ok(answered.dns > 0 && answered.dhcpv6 > 0, `DNS and DHCPv6 answers came up too (${JSON.stringify(answered)})`);
});
