// The agent's flow side, as the runtime and tests use it. The runtime needs AgentFlows and a
// switch (OfSwitch over an OfChannel to br-int, or MemorySwitch in a simulation); the pure
// pieces are exported for tests and tools. Each export is chosen.

export { AgentFlows, APPLY_ERRORS_MAX, type AgentFlowsOptions, type ApplyResult } from './agent-flows.js';
export type { FlowSwitch, ReconcileResult, SwitchBatch, SwitchContents } from './switch.js';
export { OfSwitch, OfSwitchError } from './ofswitch.js';
export { MemorySwitch, MemorySwitchError } from './memory-switch.js';
export { DesiredFlows, type DesiredFlowsOptions, type UpdateStats } from './desired.js';
export { SharedCompileCache } from './compile-cache.js';
export { FlowTable, canonicalMatch } from './flow-table.js';
export { computeLocality, isRelatedPort, type LocalDatapath, type Locality } from './local-datapaths.js';
export { assignCtZones, ctZoneUsers, dnatZoneKey, snatZoneKey, CT_ZONE_MAX } from './ct-zones.js';
export { OVN_GENEVE } from './physical.js';
