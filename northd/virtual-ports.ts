// Virtual ports (LSP type "virtual"): a VIP that one of several parent ports holds at a time,
// as Neutron's allowed address pairs for VRRP/keepalived use them. Northd reads two options,
// options:virtual-ip and options:virtual-parents, and the SB binding's chassis-owned columns:
// once a chassis has claimed the port (chassis set) through a parent (virtual_parent set), the
// routers resolve the VIP to that parent's MAC. The flows are in lflows/virtual.ts.
//
// As ovn-northd 23.03 reads them: an IP with a '.' is IPv4 and must be a dotted quad as
// inet_pton(AF_INET) takes it, any other must parse as inet_pton(AF_INET6) does; the parents are
// the comma-separated names (strtok_r: empty ones skipped, white space kept). The IP goes into
// the flows as written.
import type * as nb from '../ovsdb/rows/nb.js';
import { parseIpv6Groups } from './addresses.js';
import { ipv6NetAddr } from './netaddr.js';

export interface VirtualPortFacts {
  /** options:virtual-ip as written. */
  readonly ip: string;
  readonly v6: boolean;
  /** IPv6: the solicited-node multicast address of the IP, as inet_ntop prints it. */
  readonly snAddrS: string | undefined;
  /** options:virtual-parents: the names in order (a name may repeat). */
  readonly parents: readonly string[];
  /** The SB binding's virtual_parent, when a chassis has claimed the port (chassis is set). */
  readonly boundParent: string | undefined;
}

/** The chassis-owned columns a virtual port's facts read. */
export interface VirtualOwned {
  readonly chassis?: readonly string[];
  readonly virtual_parent?: readonly string[];
}

/** A dotted quad as glibc's inet_pton(AF_INET) accepts it: four decimal parts up to 255, no leading zeros. */
export function isInetPton4(text: string): boolean {
  const parts = text.split('.');
  if (parts.length !== 4) return false;
  return parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255);
}

/**
 * The facts of a virtual LSP, or undefined when it is not one ovn-northd builds flows for: not of
 * type "virtual", an option missing, or an IP that does not parse.
 */
export function virtualPortFacts(lsp: nb.Logical_Switch_Port, owned: VirtualOwned | undefined): VirtualPortFacts | undefined {
  if (lsp.type !== 'virtual') return undefined;
  const ip = lsp.options.get('virtual-ip');
  const parentsText = lsp.options.get('virtual-parents');
  if (ip === undefined || parentsText === undefined) return undefined;
  const v6 = !ip.includes('.');
  let snAddrS: string | undefined;
  if (v6) {
    const groups = parseIpv6Groups(ip);
    if (groups === undefined) return undefined;
    snAddrS = ipv6NetAddr(groups, 128).snAddrS;
  } else if (!isInetPton4(ip)) {
    return undefined;
  }
  const parent = owned?.virtual_parent?.[0];
  const claimed = parent !== undefined && parent !== '' && (owned?.chassis?.length ?? 0) > 0;
  return { ip, v6, snAddrS, parents: parentsText.split(',').filter((s) => s !== ''), boundParent: claimed ? parent : undefined };
}

/** Every port name the facts refer to: the parents the options list and the SB's bound parent. */
export function virtualPortRefs(f: VirtualPortFacts | undefined): string[] {
  if (f === undefined) return [];
  return f.boundParent === undefined ? [...f.parents] : [...f.parents, f.boundParent];
}
