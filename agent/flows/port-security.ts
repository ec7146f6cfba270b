// Port security (ovn-controller 23.03, lflow.c consider_port_sec_flows): for each port bound
// here with Port_Binding.port_security, the flows that check_in_port_sec() and
// check_out_port_sec() consult — table 73 (ingress: source MAC and IPs), 74 (ingress ARP and
// neighbour discovery), 75 (egress: destination MAC and IPs). A flow sets MLF_CHECK_PORT_SEC
// (reg10[12]) to 1 to refuse and to 0 to allow; table 73 may resubmit to 74.
//
// OVN builds these by editing one match in place from flow to flow, so fields set for one flow
// stay in the next; and Open vSwitch then puts on the wire only the fields a flow's protocol
// has (an ND source MAC only in a solicitation, an ND target MAC only in an advertisement). Both
// are reproduced here, flow for flow, including OVN's hop limit of 225 (not 255) in the
// neighbour-discovery flows: the aim is ovn-controller's table.

import type * as sb from '../../ovsdb/rows/sb.js';
import { cookieOf } from '../compile/logical-flow.js';
import { LOG_REG, MLF, OFTABLE } from '../compile/tables.js';
import type { FlowSpec, MaskedValue, OfAction } from '../openflow/types.js';

const ETH_IP = 0x0800n;
const ETH_ARP = 0x0806n;
const ETH_IPV6 = 0x86ddn;
const ICMPV6 = 58n;
const ones = (bits: number): bigint => (1n << BigInt(bits)) - 1n;

interface Ip4 { readonly addr: bigint; readonly plen: number }
interface Ip6 { readonly addr: bigint; readonly plen: number }
interface PsAddrs { readonly ea: bigint; readonly ip4: readonly Ip4[]; readonly ip6: readonly Ip6[] }

function parseMac(t: string): bigint | undefined {
  if (!/^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$/.test(t)) return undefined;
  return t.split(':').reduce((a, b) => (a << 8n) | BigInt(parseInt(b, 16)), 0n);
}

function parseIp4(t: string): bigint | undefined {
  const p = t.split('.');
  if (p.length !== 4 || !p.every((x) => /^[0-9]{1,3}$/.test(x) && Number(x) <= 255)) return undefined;
  return p.reduce((a, x) => (a << 8n) | BigInt(Number(x)), 0n);
}

function parseIp6(t: string): bigint | undefined {
  let head = t;
  let tail4: bigint | undefined;
  if (t.includes('.')) {
    const at = t.lastIndexOf(':');
    tail4 = parseIp4(t.slice(at + 1));
    if (tail4 === undefined) return undefined;
    head = `${t.slice(0, at + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const g = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const left = g(halves[0] ?? '');
  const right = halves.length === 2 ? g(halves[1] ?? '') : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  let v = 0n;
  for (const x of [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right]) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(x)) return undefined;
    v = (v << 16n) | BigInt(parseInt(x, 16));
  }
  return tail4 === undefined ? v : (v & ~0xffffffffn) | tail4;
}

/** extract_lsp_addresses: "MAC [IP[/plen] …]"; undefined when there is no MAC first. */
export function parsePortSecurity(text: string): PsAddrs | undefined {
  const toks = text.trim().split(/\s+/);
  const ea = parseMac(toks[0] ?? '');
  if (ea === undefined) return undefined;
  const ip4: Ip4[] = [];
  const ip6: Ip6[] = [];
  for (const tok of toks.slice(1)) {
    const [a = '', p] = tok.split('/');
    const v4 = parseIp4(a);
    if (v4 !== undefined) {
      const plen = p === undefined ? 32 : Number(p);
      if (Number.isInteger(plen) && plen >= 0 && plen <= 32) ip4.push({ addr: v4, plen });
      continue;
    }
    const v6 = parseIp6(a);
    if (v6 !== undefined) {
      const plen = p === undefined ? 128 : Number(p);
      if (Number.isInteger(plen) && plen >= 0 && plen <= 128) ip6.push({ addr: v6, plen });
    }
  }
  return { ea, ip4, ip6 };
}

const mask4 = (plen: number): bigint => (plen === 0 ? 0n : (ones(plen) << BigInt(32 - plen)));
const mask6 = (plen: number): bigint => (plen === 0 ? 0n : (ones(plen) << BigInt(128 - plen)));

/** in6_generate_lla: fe80::/64 with the EUI-64 of the MAC. */
function lla(ea: bigint): bigint {
  const eui = (((ea >> 24n) ^ 0x020000n) << 40n) | (0xfffen << 24n) | (ea & 0xffffffn);
  return (0xfe80n << 112n) | eui;
}

/** OVS's struct match, as far as these flows use it: one slot per flow field. */
interface M {
  metadata?: bigint;
  inport?: bigint;
  outport?: bigint;
  dlSrc?: bigint;
  dlDst?: bigint;
  dlType?: bigint;
  nwSrc?: MaskedValue;
  nwDst?: MaskedValue;
  ipv6Src?: MaskedValue;
  ipv6Dst?: MaskedValue;
  nwProto?: bigint;
  nwTtl?: bigint;
  tpSrc?: bigint;
  tpDst?: bigint;
  /** flow->arp_sha: ARP sender MAC, or ND source link-layer address. */
  sha?: bigint;
  /** flow->arp_tha: ARP target MAC, or ND target link-layer address. */
  tha?: bigint;
  ndTarget?: MaskedValue;
}

const exact = (v: bigint, bits: number): MaskedValue => ({ value: v, mask: ones(bits) });

/** The fields of 'm' as Open vSwitch puts them on the wire (nx_put_match): each protocol's own. */
function wire(m: M): Map<string, MaskedValue> {
  const out = new Map<string, MaskedValue>();
  if (m.metadata !== undefined) out.set('metadata', exact(m.metadata, 64));
  if (m.inport !== undefined) out.set(LOG_REG.INPORT, exact(m.inport, 32));
  if (m.outport !== undefined) out.set(LOG_REG.OUTPORT, exact(m.outport, 32));
  if (m.dlSrc !== undefined) out.set('eth_src', exact(m.dlSrc, 48));
  if (m.dlDst !== undefined) out.set('eth_dst', exact(m.dlDst, 48));
  if (m.dlType === undefined) return out;
  out.set('eth_type', exact(m.dlType, 16));
  if (m.dlType === ETH_ARP) {
    if (m.nwSrc !== undefined) out.set('arp_spa', m.nwSrc);
    if (m.nwDst !== undefined) out.set('arp_tpa', m.nwDst);
    if (m.sha !== undefined) out.set('arp_sha', exact(m.sha, 48));
    if (m.tha !== undefined) out.set('arp_tha', exact(m.tha, 48));
    return out;
  }
  if (m.dlType === ETH_IP) {
    if (m.nwSrc !== undefined) out.set('ipv4_src', m.nwSrc);
    if (m.nwDst !== undefined) out.set('ipv4_dst', m.nwDst);
  } else if (m.dlType === ETH_IPV6) {
    if (m.ipv6Src !== undefined) out.set('ipv6_src', m.ipv6Src);
    if (m.ipv6Dst !== undefined) out.set('ipv6_dst', m.ipv6Dst);
  } else {
    return out;
  }
  if (m.nwTtl !== undefined) out.set('nw_ttl', exact(m.nwTtl, 8));
  if (m.nwProto === undefined) return out;
  out.set('ip_proto', exact(m.nwProto, 8));
  if (m.dlType === ETH_IP && m.nwProto === 17n) {
    if (m.tpSrc !== undefined) out.set('udp_src', exact(m.tpSrc, 16));
    if (m.tpDst !== undefined) out.set('udp_dst', exact(m.tpDst, 16));
  } else if (m.dlType === ETH_IPV6 && m.nwProto === ICMPV6) {
    if (m.tpSrc !== undefined) out.set('icmpv6_type', exact(m.tpSrc, 8));
    if (m.tpDst !== undefined) out.set('icmpv6_code', exact(m.tpDst, 8));
    const nd = m.tpSrc === 135n || m.tpSrc === 136n;
    if (nd && m.ndTarget !== undefined) out.set('nd_target', m.ndTarget);
    if (m.tpSrc === 135n && m.sha !== undefined) out.set('nd_sll', exact(m.sha, 48));
    if (m.tpSrc === 136n && m.tha !== undefined) out.set('nd_tll', exact(m.tha, 48));
  }
  return out;
}

const flagBit = (v: 0n | 1n): OfAction => ({ kind: 'load', dst: { field: LOG_REG.FLAGS, start: MLF.CHECK_PORT_SEC, end: MLF.CHECK_PORT_SEC }, value: v });
const DENY = [flagBit(1n)];
const ALLOW = [flagBit(0n)];
const TO_ND: OfAction[] = [{ kind: 'resubmit', table: OFTABLE.CHK_IN_PORT_SEC_ND }];

/** The port security flows of one port in the datapath with tunnel key dpKey (none without
 *  port_security, or without a MAC in it). */
export function portSecurityFlows(pb: sb.Port_Binding, dpKey: number): FlowSpec[] {
  const addrs = pb.port_security.map(parsePortSecurity).filter((a): a is PsAddrs => a !== undefined);
  if (addrs.length === 0) return [];
  const cookie = cookieOf(pb._uuid);
  const out: FlowSpec[] = [];
  const add = (table: number, priority: number, m: M, actions: readonly OfAction[]): void => {
    out.push({ table, priority, match: wire(m), actions, cookie });
  };
  const key = BigInt(pb.tunnel_key);
  const dp = BigInt(dpKey);
  /** reset_match_for_port_sec_flows. */
  const reset = (dir: 'in' | 'out'): M => (dir === 'in' ? { metadata: dp, inport: key } : { metadata: dp, outport: key });

  // build_in_port_sec_default_flows
  let m = reset('in');
  add(OFTABLE.CHK_IN_PORT_SEC, 80, m, DENY);
  m.dlType = ETH_ARP;
  add(OFTABLE.CHK_IN_PORT_SEC, 95, m, TO_ND);
  m = reset('in');
  m.dlType = ETH_ARP;
  add(OFTABLE.CHK_IN_PORT_SEC_ND, 80, m, DENY);
  Object.assign(m, { dlType: ETH_IPV6, nwProto: ICMPV6, nwTtl: 255n, tpSrc: 136n });
  add(OFTABLE.CHK_IN_PORT_SEC_ND, 80, m, DENY);
  Object.assign(m, { dlType: ETH_IPV6, nwProto: ICMPV6, nwTtl: 255n, tpSrc: 135n });
  add(OFTABLE.CHK_IN_PORT_SEC_ND, 80, m, ALLOW);

  for (const a of addrs) {
    // build_in_port_sec_no_ip_flows
    if (a.ip4.length === 0 && a.ip6.length === 0) {
      m = reset('in');
      m.dlSrc = a.ea;
      add(OFTABLE.CHK_IN_PORT_SEC, 90, m, TO_ND);
    }
    // build_in_port_sec_ip4_flows
    if (a.ip4.length > 0) {
      for (const ip of a.ip4) {
        m = reset('in');
        Object.assign(m, { dlSrc: a.ea, dlType: ETH_IP });
        const mask = mask4(ip.plen);
        m.nwSrc = ip.plen === 32 || (ip.addr & ~mask & 0xffffffffn) !== 0n ? exact(ip.addr, 32) : { value: ip.addr & mask, mask };
        add(OFTABLE.CHK_IN_PORT_SEC, 90, m, ALLOW);
      }
      m = reset('in');
      Object.assign(m, { dlSrc: a.ea, dlType: ETH_IP, nwSrc: exact(0n, 32), nwDst: exact(0xffffffffn, 32), nwProto: 17n, tpSrc: 68n, tpDst: 67n });
      add(OFTABLE.CHK_IN_PORT_SEC, 90, m, ALLOW);
    }
    // build_in_port_sec_arp_flows
    if (!(a.ip4.length === 0 && a.ip6.length > 0)) {
      if (a.ip4.length === 0) {
        m = reset('in');
        Object.assign(m, { dlSrc: a.ea, dlType: ETH_ARP, sha: a.ea });
        add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
      }
      for (const ip of a.ip4) {
        m = reset('in');
        Object.assign(m, { dlSrc: a.ea, dlType: ETH_ARP, sha: a.ea });
        const mask = mask4(ip.plen);
        m.nwSrc = ip.plen === 32 || (ip.addr & ~mask & 0xffffffffn) !== 0n ? exact(ip.addr, 32) : { value: ip.addr & mask, mask };
        add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
      }
    }
    // build_in_port_sec_ip6_flows
    if (a.ip6.length > 0) {
      for (const ip of a.ip6) {
        m = reset('in');
        Object.assign(m, { dlSrc: a.ea, dlType: ETH_IPV6 });
        m.ipv6Src = ip6Match(ip);
        add(OFTABLE.CHK_IN_PORT_SEC, 90, m, TO_ND);
      }
      m = reset('in');
      Object.assign(m, { dlSrc: a.ea, dlType: ETH_IPV6, ipv6Src: exact(lla(a.ea), 128) });
      add(OFTABLE.CHK_IN_PORT_SEC, 90, m, TO_ND);
      Object.assign(m, { ipv6Src: exact(0n, 128), ipv6Dst: { value: 0xff02n << 112n, mask: mask6(16) }, nwProto: ICMPV6, tpSrc: 131n, tpDst: 0n });
      add(OFTABLE.CHK_IN_PORT_SEC, 90, m, ALLOW);
      m.tpSrc = 143n;
      add(OFTABLE.CHK_IN_PORT_SEC, 90, m, ALLOW);
      m.tpSrc = 135n;
      add(OFTABLE.CHK_IN_PORT_SEC, 90, m, TO_ND);
    }
    // build_in_port_sec_nd_flows
    m = reset('in');
    Object.assign(m, { dlType: ETH_IPV6, nwProto: ICMPV6, nwTtl: 225n, tpSrc: 135n, tpDst: 0n, sha: 0n });
    add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
    m.sha = a.ea;
    add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
    Object.assign(m, { tpSrc: 136n, tpDst: 0n });
    if (a.ip6.length > 0) {
      Object.assign(m, { tha: 0n, ndTarget: exact(lla(a.ea), 128) });
      add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
      m.tha = a.ea;
      add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
      for (const ip of a.ip6) {
        m = reset('in');
        Object.assign(m, { dlSrc: a.ea, dlType: ETH_IPV6, nwProto: ICMPV6, tpSrc: 136n, tpDst: 0n, tha: 0n, ndTarget: ip6Match(ip) });
        add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
        m.tha = a.ea;
        add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
      }
    } else {
      m.tha = 0n;
      add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
      m.tha = a.ea;
      add(OFTABLE.CHK_IN_PORT_SEC_ND, 90, m, ALLOW);
    }
  }

  // Out port security.
  m = reset('out');
  add(OFTABLE.CHK_OUT_PORT_SEC, 80, m, DENY);
  for (const a of addrs) {
    // build_out_port_sec_no_ip_flows
    m = reset('out');
    m.dlDst = a.ea;
    add(OFTABLE.CHK_OUT_PORT_SEC, 85, m, ALLOW);
    if (a.ip4.length === 0 && a.ip6.length === 0) continue;
    // build_out_port_sec_ip4_flows
    m = reset('out');
    Object.assign(m, { dlDst: a.ea, dlType: ETH_IP });
    add(OFTABLE.CHK_OUT_PORT_SEC, 90, m, DENY);
    if (a.ip4.length > 0) {
      for (const ip of a.ip4) {
        m = reset('out');
        Object.assign(m, { dlDst: a.ea, dlType: ETH_IP });
        const mask = mask4(ip.plen);
        if (ip.plen === 32 || (ip.addr & ~mask & 0xffffffffn) !== 0n) {
          if (ip.plen !== 32) {
            m.nwDst = exact((ip.addr & mask) | (~mask & 0xffffffffn), 32);
            add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
          }
          m.nwDst = exact(ip.addr, 32);
        } else {
          m.nwDst = { value: ip.addr & mask, mask };
        }
        add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
      }
      m = reset('out');
      Object.assign(m, { dlDst: a.ea, dlType: ETH_IP, nwDst: exact(0xffffffffn, 32) });
      add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
      m.nwDst = { value: 0xe0000000n, mask: 0xf0000000n };
      add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
    }
    // build_out_port_sec_ip6_flows
    m = reset('out');
    Object.assign(m, { dlDst: a.ea, dlType: ETH_IPV6 });
    add(OFTABLE.CHK_OUT_PORT_SEC, 90, m, DENY);
    if (a.ip6.length === 0) continue;
    for (const ip of a.ip6) {
      m = reset('out');
      Object.assign(m, { dlDst: a.ea, dlType: ETH_IPV6, ipv6Dst: ip6Match(ip) });
      add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
    }
    m = reset('out');
    Object.assign(m, { dlDst: a.ea, dlType: ETH_IPV6, ipv6Dst: exact(lla(a.ea), 128) });
    add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
    m.ipv6Dst = { value: 0xffn << 120n, mask: mask6(8) };
    add(OFTABLE.CHK_OUT_PORT_SEC, 95, m, ALLOW);
  }
  return out;
}

/** An IPv6 port security address as OVN matches it: the address itself when it is a host
 *  address (plen 128, or host bits set), else its network. */
function ip6Match(ip: Ip6): MaskedValue {
  const mask = mask6(ip.plen);
  return ip.plen === 128 || (ip.addr & ~mask & ones(128)) !== 0n ? exact(ip.addr, 128) : { value: ip.addr & mask, mask };
}
