// Gratuitous ARPs (and RARPs) announced on localnet networks, as ovn-controller 23.03.1's pinctrl
// sends them (send_garp_rarp_prepare, send_garp_rarp_update, send_garp_rarp): switches and routers
// on the physical segment learn where a MAC and its IPv4 address now are, after a VM is bound here
// or a gateway port fails over to this chassis. What is announced:
//   - every VIF bound here (an interface on the integration bridge with an iface-id, its
//     Port_Binding's chassis this one) whose datapath is local with a localnet port plugged here:
//     the first entry of its `mac` column that parses, with its first IPv4 address (a RARP when it
//     has none); localports never;
//   - on every such datapath, the nat_addresses of its patch ports and of the l3gateway ports
//     bound here (options:nat-addresses when the column is empty): each entry "MAC IP...
//     [is_chassis_resident("PORT")]" whose port is resident here (a patch port's entry must name
//     one), one GARP per IPv4 address (a RARP when there is none).
// Each announcement enters the logical ingress pipeline of the port's datapath as if from that
// port (so the switch floods it, out through the localnet port too). It is sent 1 s after it
// appears, then after 2, 4, 8 and 16 s more: five times in all, and again only once it has gone
// and come back (the port rebound, the gateway failed over here). With garp-max-timeout-sec
// (ovn-controller 23.03.3's key) they never stop: the wait doubles from 1 s up to that cap.
//
// `garpSpecs` reads what to announce (pure); `Garps` keeps the schedule, with injected timers.
// Left out: ovn-controller also writes a MAC_Binding for each announcement of a VIF or NAT
// address for the routers on the same switch (send_garp_locally); here only the GARP itself,
// flooded by the switch, goes to them.

import type * as sb from '../../ovsdb/rows/sb.js';
import { LOG_REG, OFTABLE } from '../compile/tables.js';
import type { Locality } from '../flows/local-datapaths.js';
import { isChassisResident } from '../flows/local-datapaths.js';
import type { SbLookups } from '../flows/sb-store.js';
import type { LocalView } from '../local-view.js';
import { OFPP } from '../openflow/actions.js';
import { OFP_NO_BUFFER, type OfMessage } from '../openflow/messages.js';
import { AnnounceSchedule, type AnnounceState, type AnnounceStats } from './announce-schedule.js';
import { ARP_OP, buildArp, buildEthernet, ETH_TYPE, formatIpv4, MAC_BROADCAST, MAC_ZERO, parseIpv4, parseMac, type Ipv4, type Mac } from './packet.js';

const OFPP10_CONTROLLER = 0xfffd;
/** Ethertype of a RARP (RFC 903), and its "request reverse" opcode. */
const ETH_TYPE_RARP = 0x8035;
const RARP_OP_REQUEST_REVERSE = 3;
/** The first announcement's delay, and the backoff after which no more are sent (pinctrl.c). */
const GARP_FIRST_DELAY_MS = 1000;
const GARP_BACKOFF_LAST = 16;

/** One announcement and where it enters. */
export interface GarpSpec {
  /** ovn-controller's key: the VIF's name, or "<port>-<IPv4>" / "<port>-noip" for NAT addresses. */
  readonly key: string;
  readonly mac: Mac;
  /** The announced IPv4 address; none: a RARP. */
  readonly ipv4: Ipv4 | undefined;
  readonly dpKey: number;
  readonly portKey: number;
}

/** An address entry "MAC [IP...]" and what follows the addresses (extract_addresses with an offset). */
function splitAddresses(text: string): { mac: Mac; ipv4: Ipv4[]; rest: string } | undefined {
  const tokens = text.trim().split(/\s+/);
  const mac = parseMac(tokens[0] ?? '');
  if (mac === undefined) return undefined;
  const ipv4: Ipv4[] = [];
  let i = 1;
  for (; i < tokens.length; i++) {
    const t = tokens[i] as string;
    const slash = t.indexOf('/');
    const v4 = parseIpv4(slash < 0 ? t : t.slice(0, slash));
    if (v4 !== undefined) {
      ipv4.push(v4);
      continue;
    }
    // An IPv6 address is an address too; it is not announced.
    if (/^[0-9a-fA-F:]+:[0-9a-fA-F:.]*(\/\d+)?$/.test(t)) continue;
    break;
  }
  return { mac, ipv4, rest: tokens.slice(i).join(' ') };
}

/**
 * A nat_addresses entry (extract_addresses_with_port): the addresses and the port named by a
 * trailing is_chassis_resident("PORT"). Undefined when the entry is malformed in a way pinctrl
 * refuses (no MAC, or a broken is_chassis_resident); other trailing text is ignored, as there.
 */
export function parseNatAddresses(text: string): { mac: Mac; ipv4: Ipv4[]; port: string | undefined } | undefined {
  const a = splitAddresses(text);
  if (a === undefined) return undefined;
  if (a.rest === '' || !/^is_chassis_resident\b/.test(a.rest)) return { mac: a.mac, ipv4: a.ipv4, port: undefined };
  const m = /^is_chassis_resident\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)/.exec(a.rest);
  if (m === null) return undefined;
  return { mac: a.mac, ipv4: a.ipv4, port: (m[1] as string).replace(/\\(.)/g, '$1') };
}

/** What to announce now (send_garp_rarp_prepare), sorted by key. */
export function garpSpecs(sbl: SbLookups, chassisUuid: string | undefined, view: LocalView, locality: Locality): GarpSpec[] {
  if (chassisUuid === undefined) return [];
  const out = new Map<string, GarpSpec>();
  const onLocalnet = (pb: sb.Port_Binding): sb.Datapath_Binding | undefined => {
    const ld = locality.datapaths.get(pb.datapath);
    return ld?.localnetPort === undefined ? undefined : sbl.datapath(pb.datapath);
  };
  // VIFs bound here on a localnet network.
  for (const iface of [...view.vifs.keys()].sort()) {
    const pb = sbl.portByName(iface);
    if (pb === undefined || pb.chassis[0] !== chassisUuid || pb.type === 'localport') continue;
    const dp = onLocalnet(pb);
    if (dp === undefined) continue;
    for (const entry of pb.mac) {
      const a = splitAddresses(entry);
      if (a === undefined) continue;
      out.set(pb.logical_port, { key: pb.logical_port, mac: a.mac, ipv4: a.ipv4[0], dpKey: dp.tunnel_key, portKey: pb.tunnel_key });
      break;
    }
  }
  // NAT addresses of patch ports and of l3gateway ports bound here, on those networks.
  // Only patch and l3gateway ports carry them: the store's index of those, not every port.
  for (const ld of locality.datapaths.values()) {
    if (ld.localnetPort === undefined) continue;
    for (const u of sbl.patchPortsOfDatapath(ld.uuid)) {
      const pb = sbl.portBinding(u);
      if (pb === undefined || !(pb.type === 'patch' || (pb.type === 'l3gateway' && pb.chassis[0] === chassisUuid))) continue;
      const option = pb.options.get('nat-addresses');
      const entries = pb.nat_addresses.length > 0 ? pb.nat_addresses : option === undefined ? [] : [option];
      for (const entry of entries) {
        const a = parseNatAddresses(entry);
        if (a === undefined || (a.port === undefined && pb.type === 'patch')) continue;
        if (a.port !== undefined && !isChassisResident(sbl, a.port, chassisUuid, view.activeTunnels)) continue;
        const base = { mac: a.mac, dpKey: ld.tunnelKey, portKey: pb.tunnel_key };
        for (const ip of a.ipv4) {
          const key = `${pb.logical_port}-${formatIpv4(ip)}`;
          out.set(key, { key, ipv4: ip, ...base });
        }
        if (a.ipv4.length === 0) out.set(`${pb.logical_port}-noip`, { key: `${pb.logical_port}-noip`, ipv4: undefined, ...base });
      }
    }
  }
  return [...out.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The frame: a broadcast ARP request for its own address (sha = the MAC, spa = tpa = the IPv4), or a RARP. */
export function garpPacket(spec: Pick<GarpSpec, 'mac' | 'ipv4'>): Buffer {
  if (spec.ipv4 !== undefined) {
    const arp = buildArp({ op: ARP_OP.REQUEST, sha: spec.mac, spa: spec.ipv4, tha: MAC_ZERO, tpa: spec.ipv4 });
    return buildEthernet({ dst: MAC_BROADCAST, src: spec.mac, ethType: ETH_TYPE.ARP }, arp);
  }
  const rarp = buildArp({ op: RARP_OP_REQUEST_REVERSE, sha: spec.mac, spa: 0, tha: spec.mac, tpa: 0 });
  return buildEthernet({ dst: MAC_BROADCAST, src: spec.mac, ethType: ETH_TYPE_RARP }, rarp);
}

/** The packet-out that enters the announcement into its port's datapath, as from that port. */
export function garpPacketOut(spec: GarpSpec): Extract<OfMessage, { kind: 'packet_out' }> {
  return {
    kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, data: garpPacket(spec),
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(spec.dpKey) },
      { kind: 'set_field', field: LOG_REG.INPORT, value: BigInt(spec.portKey) },
      { kind: 'resubmit', table: OFTABLE.LOG_INGRESS_PIPELINE, inPort: OFPP10_CONTROLLER },
    ],
  };
}

/** Announcements sent, and those the channel could not take. */
export type GarpStats = AnnounceStats;

interface GarpState extends AnnounceState {
  spec: GarpSpec;
  backoff: number;
}

/** The schedule of the announcements: one timer, for the earliest due. */
export class Garps extends AnnounceSchedule<GarpState> {
  /** garp-max-timeout-sec: 0, or the cap of the backoff (then the announcements never stop). */
  private maxTimeoutSec = 0;

  /**
   * garp-max-timeout-sec, as ovn-controller 23.03.3 reads it (it came with that release; 23.03.1,
   * whose schedule is kept when it is 0, has no such key): with a cap, every announcement is
   * repeated forever, 1 s after it appears and then after 1, 2, 4, ... s, the wait doubling up to
   * the cap. A change starts every current announcement over, as pinctrl resets their backoff.
   */
  setMaxTimeoutSec(sec: number): void {
    if (!Number.isInteger(sec) || sec < 0) throw new RangeError(`garp-max-timeout-sec must be a count of seconds, not ${sec}`);
    if (sec === this.maxTimeoutSec) return;
    this.maxTimeoutSec = sec;
    const now = this.options.timers.now();
    for (const s of this.states.values()) {
      s.nextMs = now + GARP_FIRST_DELAY_MS;
      s.backoff = 1;
    }
    this.arm();
  }

  /**
   * What to announce now: a new key starts its five announcements; a known one keeps its
   * schedule and takes the new datapath and port keys (its MAC and address are its key's, as in
   * pinctrl); a key that went stops.
   */
  sync(specs: readonly GarpSpec[]): void {
    const seen = new Set<string>();
    for (const spec of specs) {
      seen.add(spec.key);
      const old = this.states.get(spec.key);
      if (old === undefined) this.states.set(spec.key, { spec, nextMs: this.options.timers.now() + GARP_FIRST_DELAY_MS, backoff: 1 });
      else old.spec = { ...old.spec, dpKey: spec.dpKey, portKey: spec.portKey };
    }
    for (const key of [...this.states.keys()]) if (!seen.has(key)) this.states.delete(key);
    this.arm();
  }

  protected packetsOf(s: GarpState): { message: OfMessage; what: string }[] {
    return [{ message: garpPacketOut(s.spec), what: `gratuitous ARP for ${s.spec.key}` }];
  }

  protected reschedule(s: GarpState, now: number): void {
    if (this.maxTimeoutSec > 0) {
      // 23.03.3's send_garp_rarp with garp_rarp_continuous: wait the backoff, then double it.
      s.nextMs = now + s.backoff * 1000;
      s.backoff = Math.min(this.maxTimeoutSec, s.backoff * 2);
      return;
    }
    if (s.backoff < GARP_BACKOFF_LAST) {
      s.backoff *= 2;
      s.nextMs = now + s.backoff * 1000;
    } else {
      s.nextMs = Infinity;
    }
  }
}
