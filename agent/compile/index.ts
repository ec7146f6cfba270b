// Compiling whole SB Logical_Flow rows into OpenFlow FlowSpecs, and showing them as ovs-ofctl
// text. Each export is chosen; the action and match compilers stay behind these.

export { compileLogicalFlow, cookieOf, createCompileMemo, compileMemoEntriesMax, type CompileMemo } from './logical-flow.js';
export type { DatapathInfo, FlowCompileContext, LogicalFlowResult, LogicalFlowRow } from './logical-flow.js';
export { formatAction, formatActions, formatFlow, formatMatchFields, type OfctlOptions } from './ofctl.js';
export { ACTION_OPCODE, LOG_PIPELINE_LEN, LOG_REG, MLF, OFTABLE, OFTABLE_OUTPUT_INIT } from './tables.js';
export { sbCompileContext, type SbContextOptions, type SbTables } from './sb-context.js';
