// Which SB BFD rows this chassis runs, read from the agent's SB view (the selection half of
// ovn-controller 23.03's bfd_monitor_run). A row's logical_port is a router port; the session
// runs where that port's traffic leaves the router:
//   - the port's binding has options:peer naming a binding that exists (a router port attached
//     to a switch or to another router), and
//   - the port is an l3gateway port bound to this chassis (a gateway router's port), or its
//     chassisredirect port "cr-<logical_port>" is resident here (a distributed gateway port:
//     isChassisResident — bound here, or this chassis the active member of its
//     HA_Chassis_Group, with the live tunnel sessions of `activeTunnels`).
// The rows of other chassis are left out silently. A row of ours that cannot run is skipped and
// named with why: a dst_ip that does not parse, or a port with no address entry of dst_ip's
// family — the session's source is the MAC of the first entry of the binding's `mac` that parses
// and has an address of that family, with its first such address. (ovn-controller goes on with
// 169.254.1.1 → 169.254.1.0 in the second case, which reaches no next hop, and reads past the
// end of its address list when dst_ip is IPv6 and the entry has only IPv4.) Pure.

import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { isChassisResident } from '../flows/local-datapaths.js';
import type { SbLookups } from '../flows/sb-store.js';
import { u32, type BfdEndpoints } from './bfd-packet.js';
import { lspEntryAddresses, parseIpAddr } from './svc-monitor-specs.js';
import { ipText, type IpAddr } from './svc-probe.js';

/** What the specs read of the SB view; SbStore has it. */
export type BfdLookups = SbLookups & { table(name: string): ReadonlyMap<string, Row> };

/** One BFD row this chassis runs, with what the SB view says of its port. */
export interface BfdSessionSpec {
  /** The BFD row. */
  readonly uuid: string;
  /** The session's identity, as ovn-controller keys its sessions: next hop and source port. */
  readonly key: string;
  readonly logicalPort: string;
  /** The tunnel keys of the router and of the port. */
  readonly dpKey: number;
  readonly portKey: number;
  readonly endpoints: BfdEndpoints;
  /** BFD.disc as the 32 bits sent in my_disc. */
  readonly disc: number;
  readonly minTxMs: number;
  readonly minRxMs: number;
  readonly detectMult: number;
  /** BFD.status as the SB view has it now. */
  readonly sbStatus: string;
}

export interface BfdSessionSpecs {
  readonly specs: BfdSessionSpec[];
  /** Rows of this chassis that cannot run, with why. */
  readonly skipped: readonly string[];
}

export function bfdSessionKey(dst: IpAddr, srcPort: number): string {
  return `${ipText(dst)}:${srcPort}`;
}

/** BFD.dst_ip's address (extract_ip_addresses takes an optional prefix length). */
function parseDstIp(text: string): IpAddr | undefined {
  const first = text.trim().split(/\s+/)[0] ?? '';
  const slash = first.indexOf('/');
  return parseIpAddr(slash < 0 ? first : first.slice(0, slash));
}

/** The port's MAC and address of `family` for a session (the first entry that has one). */
export function bfdSource(entries: readonly string[], family: IpAddr['kind']): { mac: string; ip: IpAddr } | undefined {
  for (const e of entries) {
    const a = lspEntryAddresses(e);
    const ip = a?.ips.find((x) => x.kind === family);
    if (a !== undefined && ip !== undefined) return { mac: a.mac, ip };
  }
  return undefined;
}

/** Whether this chassis runs the sessions of router port `pb` (see the header). */
export function runsBfdHere(s: SbLookups, pb: sb.Port_Binding, chassisUuid: string | undefined, activeTunnels: ReadonlySet<string> | undefined): boolean {
  const peer = pb.options.get('peer');
  if (peer === undefined || s.portByName(peer) === undefined || chassisUuid === undefined) return false;
  if (pb.type === 'l3gateway' && pb.chassis[0] === chassisUuid) return true;
  return isChassisResident(s, `cr-${pb.logical_port}`, chassisUuid, activeTunnels);
}

/** The rows this chassis runs, in row UUID order; a second row with a session's key is skipped. */
export function bfdSessionSpecs(s: BfdLookups, chassisUuid: string | undefined, activeTunnels: ReadonlySet<string> | undefined): BfdSessionSpecs {
  const specs: BfdSessionSpec[] = [];
  const skipped: string[] = [];
  const keys = new Set<string>();
  const rows = [...s.table('BFD').values()] as unknown as sb.BFD[];
  rows.sort((a, b) => (a._uuid < b._uuid ? -1 : a._uuid > b._uuid ? 1 : 0));
  for (const r of rows) {
    const pb = s.portByName(r.logical_port);
    if (pb === undefined || !runsBfdHere(s, pb, chassisUuid, activeTunnels)) continue;
    const dp = s.datapath(pb.datapath);
    if (dp === undefined) continue;
    const what = `BFD ${r._uuid} (${r.dst_ip} via ${r.logical_port})`;
    const dst = parseDstIp(r.dst_ip);
    if (dst === undefined) {
      skipped.push(`${what}: dst_ip does not parse`);
      continue;
    }
    const src = bfdSource(pb.mac, dst.kind);
    if (src === undefined) {
      skipped.push(`${what}: the port has no ${dst.kind === 'ipv4' ? 'IPv4' : 'IPv6'} address`);
      continue;
    }
    const srcPort = r.src_port & 0xffff;
    const key = bfdSessionKey(dst, srcPort);
    if (keys.has(key)) {
      skipped.push(`${what}: another row has the session ${key}`);
      continue;
    }
    keys.add(key);
    specs.push({
      uuid: r._uuid, key, logicalPort: r.logical_port, dpKey: dp.tunnel_key, portKey: pb.tunnel_key,
      endpoints: { srcMac: src.mac, src: src.ip, dst, srcPort },
      disc: u32(r.disc), minTxMs: u32(r.min_tx), minRxMs: u32(r.min_rx), detectMult: r.detect_mult & 0xff, sbStatus: r.status,
    });
  }
  return { specs, skipped };
}
