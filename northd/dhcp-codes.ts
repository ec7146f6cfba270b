// SB DHCP_Options and DHCPv6_Options: the code table of the options the put_dhcp_opts and
// put_dhcpv6_opts actions know (name, option code, value type), as ovn-northd 23.03 writes it
// from lib/ovn-l7.h. It is the same for every NB database, so the node writes it on its
// first run and never changes it.
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode } from './engine.js';
import { hashUuid } from './hash.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

type V4Type = sb.DHCP_Options['type'];
type V6Type = sb.DHCPv6_Options['type'];

export const DHCPV4_CODES: readonly (readonly [string, number, V4Type])[] = [
  ['offerip', 0, 'ipv4'], ['netmask', 1, 'ipv4'], ['router', 3, 'ipv4'], ['dns_server', 6, 'ipv4'], ['log_server', 7, 'ipv4'],
  ['lpr_server', 9, 'ipv4'], ['hostname', 12, 'str'], ['domain_name', 15, 'str'], ['swap_server', 16, 'ipv4'],
  ['ip_forward_enable', 19, 'bool'], ['policy_filter', 21, 'ipv4'], ['default_ttl', 23, 'uint8'], ['mtu', 26, 'uint16'],
  ['broadcast_address', 28, 'ipv4'], ['router_discovery', 31, 'bool'], ['router_solicitation', 32, 'ipv4'],
  ['arp_cache_timeout', 35, 'uint32'], ['ethernet_encap', 36, 'bool'], ['tcp_ttl', 37, 'uint8'], ['tcp_keepalive_interval', 38, 'uint32'],
  ['nis_server', 41, 'ipv4'], ['ntp_server', 42, 'ipv4'], ['netbios_name_server', 44, 'ipv4'], ['netbios_node_type', 46, 'uint8'],
  ['lease_time', 51, 'uint32'], ['server_id', 54, 'ipv4'], ['T1', 58, 'uint32'], ['T2', 59, 'uint32'], ['tftp_server', 66, 'host_id'],
  ['bootfile_name', 67, 'str'], ['domain_search_list', 119, 'domains'], ['classless_static_route', 121, 'static_routes'],
  ['tftp_server_address', 150, 'ipv4'], ['path_prefix', 210, 'str'], ['ms_classless_static_route', 249, 'static_routes'],
  ['wpad', 252, 'str'], ['next_server', 253, 'ipv4'], ['bootfile_name_alt', 254, 'str'],
];

export const DHCPV6_CODES: readonly (readonly [string, number, V6Type])[] = [
  ['server_id', 2, 'mac'], ['ia_addr', 5, 'ipv6'], ['dns_server', 23, 'ipv6'], ['domain_search', 24, 'str'],
];

export interface DhcpCodesData {
  readonly v4: SbTable;
  readonly v6: SbTable;
}

export function dhcpCodesNode(): EngineNode<DhcpCodesData, SbChangeSet> {
  return {
    name: 'dhcp_codes',
    inputs: ['nb'],
    init: () => ({ v4: new SbTable('DHCP_Options'), v6: new SbTable('DHCPv6_Options') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: DhcpCodesData, _inputs, out: SbChangeSet): void {
      for (const [name, code, type] of DHCPV4_CODES) {
        data.v4.put(versioned<sb.DHCP_Options>({ _uuid: hashUuid(['DHCP_Options', name]), _version: '', name, code, type }), out);
      }
      for (const [name, code, type] of DHCPV6_CODES) {
        data.v6.put(versioned<sb.DHCPv6_Options>({ _uuid: hashUuid(['DHCPv6_Options', name]), _version: '', name, code, type }), out);
      }
    },
    // The table does not depend on the NB: no NB change touches it.
    handlers: { nb: () => 'unchanged' },
  };
}
