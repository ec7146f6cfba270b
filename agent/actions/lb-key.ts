// Load balancer keys and backends as OVN reads them (lib/ovn-util.c,
// ip_address_and_port_from_lb_key): "IP", "IP:port", "[IPv6]" or "[IPv6]:port". Shared by the
// hairpin tables (agent/flows/lb-hairpin.ts) and commit_lb_aff's arguments.

import { parseIpv4, parseIpv6 } from '../expr/lexer.js';

/** An address of a VIP or backend: its family and value. */
export interface LbAddress {
  readonly v6: boolean;
  readonly ip: bigint;
}

export interface LbBackend extends LbAddress {
  /** 0 = no port. */
  readonly port: number;
}

export function parseLbHost(host: string): LbAddress | undefined {
  if (host.includes(':')) {
    const ip = parseIpv6(host);
    return ip === null ? undefined : { v6: true, ip };
  }
  const ip = parseIpv4(host);
  return ip === null ? undefined : { v6: false, ip };
}

/**
 * "IP", "IP:port", "[IPv6]" or "[IPv6]:port" (a bare IPv6 address has no port), as
 * ip_address_and_port_from_lb_key reads a load-balancer key or backend. Port 0 is no port.
 */
export function parseLbAddress(text: string): LbBackend | undefined {
  let host: string;
  let port: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    host = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined;
      port = rest.slice(1);
    }
  } else {
    const colons = text.split(':').length - 1;
    if (colons === 1) {
      const at = text.indexOf(':');
      host = text.slice(0, at);
      port = text.slice(at + 1);
    } else {
      host = text;
    }
  }
  const addr = parseLbHost(host);
  if (addr === undefined) return undefined;
  let n = 0;
  if (port !== undefined && port !== '') {
    if (!/^[0-9]{1,5}$/.test(port) || Number(port) > 65535) return undefined;
    n = Number(port);
  }
  return { ...addr, port: n };
}

