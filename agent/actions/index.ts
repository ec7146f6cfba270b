// The action half of the logical-flow compiler: one flow's actions string in, OpenFlow actions
// (plus the match prerequisites they imply and the groups they need) out. Never throws for bad
// input: a flow it cannot handle gets a clear error string.

export { compileActions, nestedDepthMax, actionCharsMax } from './compile.js';
export type { ActionContext, ActionsResult, GroupRequest, Pipeline } from './compile.js';
export { defaultDhcpOpts, type DhcpOpt } from './dhcp.js';
