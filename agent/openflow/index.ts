// The OpenFlow side of the agent: the vocabulary the flow compiler produces (types.ts), the
// channel that installs it into ovs-vswitchd, and the pure pieces a caller may want alone
// (reconciliation diff, message codec). Everything else in this folder is internal.

export type { FieldRef, FlowSpec, GroupBucket, GroupSpec, MaskedValue, MeterBand, MeterSpec, NatSpec, OfAction } from './types.js';
export { OFPMF } from './types.js';
export { ChannelError, OfChannel, type ChannelErrorKind, type ChannelOptions, type ChannelTimers } from './channel.js';
export { diffFlows, diffGroups, diffMeters, flowKey, type DiffOptions, type FlowDiff, type GroupDiff, type MeterDiff } from './reconcile.js';
export { decodeMessage, encodeMessage, type FlowMod, type FlowStats, type GroupMod, type MeterMod, type OfMessage, type TlvMapping } from './messages.js';
export { describeError } from './error-names.js';
export { OfDecodeError, type OfDecodeErrorKind } from './wire.js';
export { OfEncodeError } from './fields.js';
