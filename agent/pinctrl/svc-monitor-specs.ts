// Which Service_Monitor rows this chassis probes, read from the agent's SB view (ovn-controller's
// sync_svc_monitors): every row whose logical_port is bound to this chassis (Port_Binding.chassis),
// with the port's switch and tunnel key, and the port's MAC for the backend IP — the first
// Port_Binding.mac entry listing that IP, or else the first entry that lists no IP at all. A row
// whose IP does not parse, whose port has no such MAC, or whose src_mac / src_ip do not parse
// (or src_ip is of the other family) is skipped and counted.

import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { parseIpv6 } from '../expr/lexer.js';
import type { SbLookups } from '../flows/sb-store.js';
import { parseIpv4, parseMac, type Mac } from './packet.js';
import type { SvcMonitorSpec } from './svc-monitor-table.js';
import type { IpAddr } from './svc-probe.js';

/** What the specs read of the SB view; SbStore has it. */
export type SvcMonitorLookups = Pick<SbLookups, 'portByName' | 'chassisByName' | 'datapath'> & {
  table(name: string): ReadonlyMap<string, Row>;
};

export interface SvcMonitorSpecs {
  readonly specs: SvcMonitorSpec[];
  /** Rows of ports bound here that cannot be probed, with why. */
  readonly skipped: readonly string[];
}

/** An IP address as ip_parse / ipv6_parse read it (no prefix). */
export function parseIpAddr(text: string): IpAddr | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { kind: 'ipv4', v: v4 };
  const v6 = text.includes(':') ? parseIpv6(text) : null;
  return v6 === null ? undefined : { kind: 'ipv6', v: v6 };
}

/** An LSP address entry "MAC [IP[/PLEN] ...]": its MAC and IPs, the IPs read until the first
 *  token that is not one (extract_lsp_addresses). Undefined without a leading MAC. */
export function lspEntryAddresses(entry: string): { mac: Mac; ips: IpAddr[] } | undefined {
  const tokens = entry.split(/\s+/).filter((x) => x !== '');
  const mac = parseMac(tokens[0] ?? '');
  if (mac === undefined) return undefined;
  const ips: IpAddr[] = [];
  for (const token of tokens.slice(1)) {
    const slash = token.indexOf('/');
    const ip = parseIpAddr(slash < 0 ? token : token.slice(0, slash));
    if (ip === undefined) break;
    ips.push(ip);
  }
  return { mac, ips };
}

const sameIp = (a: IpAddr, b: IpAddr): boolean => a.kind === b.kind && a.v === b.v;

/** The MAC a probe to `ip` goes to, from the port's address entries. */
export function backendMac(entries: readonly string[], ip: IpAddr): Mac | undefined {
  for (const e of entries) {
    const a = lspEntryAddresses(e);
    if (a === undefined) continue;
    if (a.ips.some((x) => sameIp(x, ip))) return a.mac;
    if (a.ips.length === 0) return a.mac;
  }
  return undefined;
}

/** The rows the chassis named `chassisName` probes, in row UUID order. */
export function serviceMonitorSpecs(s: SvcMonitorLookups, chassisName: string): SvcMonitorSpecs {
  const chassis = s.chassisByName(chassisName)?._uuid;
  const specs: SvcMonitorSpec[] = [];
  const skipped: string[] = [];
  if (chassis === undefined) return { specs, skipped };
  const rows = [...s.table('Service_Monitor').values()] as unknown as sb.Service_Monitor[];
  rows.sort((a, b) => (a._uuid < b._uuid ? -1 : a._uuid > b._uuid ? 1 : 0));
  for (const r of rows) {
    const pb = s.portByName(r.logical_port);
    if (pb === undefined || pb.chassis[0] !== chassis) continue;
    const dp = s.datapath(pb.datapath);
    if (dp === undefined) continue;
    const what = `Service_Monitor ${r._uuid} (${r.ip}:${r.port} on ${r.logical_port})`;
    const ip = parseIpAddr(r.ip);
    if (ip === undefined) {
      skipped.push(`${what}: ip does not parse`);
      continue;
    }
    const dstMac = backendMac(pb.mac, ip);
    if (dstMac === undefined) {
      skipped.push(`${what}: the port has no MAC for ${r.ip}`);
      continue;
    }
    const srcMac = parseMac(r.src_mac);
    const srcIp = parseIpAddr(r.src_ip);
    if (srcMac === undefined || srcIp === undefined || srcIp.kind !== ip.kind) {
      skipped.push(`${what}: src_mac "${r.src_mac}" or src_ip "${r.src_ip}" unusable`);
      continue;
    }
    const status = r.status[0];
    specs.push({
      uuid: r._uuid, dpKey: dp.tunnel_key, portKey: pb.tunnel_key, ip, port: r.port,
      protocol: r.protocol[0] === 'udp' ? 'udp' : 'tcp', dstMac, srcMac, srcIp, options: r.options,
      ...(status === undefined ? {} : { sbStatus: status }),
    });
  }
  return { specs, skipped };
}
