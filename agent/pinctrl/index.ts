// The agent's packet-in handlers (OVN's pinctrl): the Pinctrl service the runtime wires to its
// OpenFlow channel and SB stream, the pure decision it is built on, and the MAC-binding and
// virtual port claim writers.
// Each export is chosen; the packet codec (packet.ts) stays internal, imported by tests directly.

export { sbPacketInContext, sbPinctrlLookup, sbPortKeys, sbVportLookup } from './sb-lookup.js';
export { Pinctrl, type MacBindingRow, type PacketInOutcome, type PinctrlChannel, type PinctrlOptions, type PinctrlStats, type PortKeys } from './pinctrl.js';
export { BufferedPackets, bufferLimits, hopKey } from './buffered-packets.js';
export {
  decidePacketIn, emptyPacketInContext, ignoreReasons, opcodeName, type IgnoreReason, type PacketInContext, type PacketInDecision,
} from './handlers.js';
export {
  MacBindingWriter, macBindingBatchMax, macBindingPendingMax, multicastDelayMsMax,
  type LearnedBinding, type MacBindingLookup, type MacBindingStats, type MacBindingWriterOptions, type PutResult, type WriterTimers,
} from './mac-binding-writer.js';
export {
  VportBindingWriter, vportBindingPendingMax,
  type VportBinding, type VportBindingStats, type VportBindingWriterOptions, type VportLookup, type VportPort, type VportPutResult,
} from './vport-binding-writer.js';
