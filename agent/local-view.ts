// What the agent knows of its own hypervisor, as the flow side needs it: which OpenFlow port
// each local VIF, tunnel and localnet patch port has on the integration bridge. The local OVS
// side (agent/local/) maintains it from the Open_vSwitch database; the flow side (agent/flows/)
// reads it and is told when it changed. Plain data: a test builds one by hand.

export interface TunnelPort {
  readonly ofport: number;
  /** "geneve" or "vxlan" (the encapsulations the physical flows produce), or "stt" (not used). */
  readonly type: string;
  /** The remote chassis's encap IP. */
  readonly remoteIp: string;
}

export interface LocalView {
  /** This chassis's name (Open_vSwitch external_ids:system-id = SB Chassis.name). */
  readonly chassis: string;
  /** Interface external_ids:iface-id (a logical port name) → ofport, for interfaces with one. */
  readonly vifs: ReadonlyMap<string, number>;
  /**
   * The MTU Open vSwitch reports for the interface of a VIF of `vifs` (Interface.mtu), by
   * iface-id, where it reports one. A port bound on several chassis answers packets too big for
   * the tunnels it is copied over with an ICMP error computed from it (physical.ts,
   * pathMtuFlows). Absent: no MTU known.
   */
  readonly vifMtus?: ReadonlyMap<string, number>;
  /** Remote chassis name → its tunnel port on the integration bridge. */
  readonly tunnels: ReadonlyMap<string, TunnelPort>;
  /** Physical network name (ovn-bridge-mappings) → the patch port on the integration bridge. */
  readonly localnetPatches: ReadonlyMap<string, number>;
  /**
   * The remote chassis with a live BFD session on their tunnel (agent/local/bfd.ts), which
   * decide the active member of an HA group (agent/ha-chassis.ts, haActiveHere). Undefined on
   * an agent that runs no BFD (no switch to run it): the rule without BFD applies.
   */
  readonly activeTunnels?: ReadonlySet<string>;
  /**
   * The integration bridge's datapath commits connections with an all-zero SNAT
   * (agent/local/integration-bridge.ts, datapathCtZeroSnat): routers' ct_commit adds nat(src).
   * Absent: the flow side's own setting.
   */
  readonly ctZeroSnat?: boolean;
  /**
   * The integration bridge's datapath has the symmetric L4 dp_hash
   * (agent/local/integration-bridge.ts, datapathDpHashL4Sym): select's groups ask for it.
   * Absent: the flow side's own setting.
   */
  readonly dpHashL4Sym?: boolean;
  /**
   * Ports this chassis has as an additional chassis whose VM sent the RARP that activates them
   * here (activation-strategy=rarp), before the SB shows it in options:additional-chassis-activated.
   */
  readonly activatedPorts?: ReadonlySet<string>;
  /**
   * The ids of the Flow_Sample_Collector_Set rows on the integration bridge: the collector sets
   * a logical flow's sample action may report to (ovn-controller's collector_ids). Absent: none.
   */
  readonly sampleCollectors?: ReadonlySet<number>;
}

/** Whether two views' name sets (activeTunnels, activatedPorts) are the same (both undefined, or the same names). */
export function sameActiveTunnels(a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.size === b.size && [...a].every((x) => b.has(x));
}

/** Whether two views have the same collector sets (absent and empty are the same: none). */
export function sameSampleCollectors(a: ReadonlySet<number> | undefined, b: ReadonlySet<number> | undefined): boolean {
  const x = a ?? new Set<number>();
  const y = b ?? new Set<number>();
  return x.size === y.size && [...x].every((id) => y.has(id));
}

export const emptyLocalView = (chassis: string): LocalView => ({
  chassis,
  vifs: new Map(),
  tunnels: new Map(),
  localnetPatches: new Map(),
});
