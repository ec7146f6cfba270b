// The planners' Port_Binding inputs (agent/local: binding, virtual-binding, patch-ports) from a
// list of rows: the rows, and a lookup of them by logical_port, which the agent's SB replica
// keeps as an index and a test builds here.
import type * as sb from '../../ovsdb/rows/sb.js';

export interface PortBindingInputs {
  readonly portBindings: readonly sb.Port_Binding[];
  readonly portBinding: (logicalPort: string) => sb.Port_Binding | undefined;
}

export function portBindingsOf(rows: Iterable<sb.Port_Binding>): PortBindingInputs {
  const list = [...rows];
  const byName = new Map(list.map((pb) => [pb.logical_port, pb]));
  return { portBindings: list, portBinding: (logicalPort) => byName.get(logicalPort) };
}
