// The agent's packet-in handlers (OVN's pinctrl): the Pinctrl service the runtime wires to its
// OpenFlow channel and SB stream, the pure decision it is built on, the MAC-binding and
// virtual port claim and Controller_Event writers, the load balancer health checks and the BFD sessions.
// Each export is chosen; the packet codec (packet.ts) stays internal, imported by tests directly.

export { sbControllerEventLookup, sbIgmpLookup, sbPacketInContext, sbPinctrlLookup, sbPortKeys, sbVportLookup } from './sb-lookup.js';
export {
  IgmpSnooping, igmpLimits, igmpSyncOps, mcastForwardPacketOut, mcastSnoopConfig, MC_FLOOD_L2_KEY, MC_MROUTER_FLOOD_KEY,
  type IgmpGroupRow, type IgmpLookup, type IgmpOutcome, type IgmpStats, type McastSnoopConfig,
} from './igmp-snooping.js';
export { Pinctrl, type MacBindingRow, type PacketInOutcome, type PinctrlChannel, type PinctrlOptions, type PinctrlStats, type PortKeys } from './pinctrl.js';
export { BufferedPackets, bufferLimits, hopKey } from './buffered-packets.js';
export {
  decidePacketIn, emptyPacketInContext, ignoreReasons, opcodeName, type IgnoreReason, type PacketInContext, type PacketInDecision,
} from './handlers.js';
export { serviceMonitorSpecs, type SvcMonitorLookups, type SvcMonitorSpecs } from './svc-monitor-specs.js';
export { SvcMonitors, type SvcMonitorStats } from './svc-monitors.js';
export { bfdSessionSpecs, type BfdLookups, type BfdSessionSpec, type BfdSessionSpecs } from './bfd-specs.js';
export { BfdSessions, type BfdSessionStats } from './bfd-sessions.js';
export { bfdSessionLimits, type BfdSessionLimits } from './bfd-session-table.js';
export { Garps, garpPacket, garpPacketOut, garpSpecs, parseNatAddresses, type GarpSpec, type GarpStats } from './garp.js';
export { IgmpQueriers, igmpQueryPacket, MC_FLOOD_KEY, mldQueryPacket, querierPacketOuts, querierSpecs, queryPacketOut, type QuerierSpec } from './igmp-querier.js';
export { PeriodicRaInputs, PeriodicRas, periodicRaPacket, periodicRaPacketOut, periodicRaSpecs, type PeriodicRaLookups, type PeriodicRaSpec, type PeriodicRaStats } from './periodic-ra.js';
export { svcMonitorDefaults, svcMonitorLimits, type SvcMonitorLimits, type SvcMonitorSpec, type SvcStatus } from './svc-monitor-table.js';
export {
  MacBindingWriter, macBindingBatchMax, macBindingPendingMax, multicastDelayMsMax,
  type LearnedBinding, type MacBindingLookup, type MacBindingStats, type MacBindingWriterOptions, type PutResult, type WriterTimers,
} from './mac-binding-writer.js';
export {
  VportBindingWriter, vportBindingPendingMax,
  type VportBinding, type VportBindingStats, type VportBindingWriterOptions, type VportLookup, type VportPort, type VportPutResult,
} from './vport-binding-writer.js';
export {
  ControllerEventWriter, controllerEventLimits,
  type ControllerEventLimits, type ControllerEventLookup, type ControllerEventPutResult, type ControllerEventRow, type ControllerEventStats,
} from './controller-event-writer.js';
export { readControllerEvent, type ControllerEventRead, type EmptyLbBackendsEvent } from './controller-event.js';
