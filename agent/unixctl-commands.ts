// ovn-controller's control commands (`ovn-appctl -t ovn-controller CMD`), with OVN 23.03's
// names, argument counts and output formats (controller/ovn-controller.c, lib/ovn-util.c),
// answered from what the agent holds: the SB source's state, the flow side's conntrack zones,
// meters and groups, the runtime's pause. ovn-controller's other commands are not offered
// (docs/operations.md, Control sockets, says which and why).
import type { AgentRuntime } from './local/agent-runtime.js';
import type { UnixctlCommand, UnixctlResult } from '../ovsdb/unixctl-server.js';
import { unixctlError, unixctlOk } from '../ovsdb/unixctl-server.js';

export interface AgentControlTarget {
  /** The runtime, once the central endpoints are known (undefined while the agent waits for them). */
  runtime(): AgentRuntime | undefined;
  /**
   * Ends the agent after the reply went out: with restart, as on SIGTERM (bindings, chassis and
   * tunnels stay for the next agent); without, with --cleanup's release and unregistration.
   */
  exit(restart: boolean): void;
}

const notStarted = (): UnixctlResult => unixctlError('the agent has not started: it waits for the central endpoints (--central or external_ids:ovn-remote)');

/** "NAME: ID" lines in name order, as ovn-controller's extend_table_list prints a table. */
function tableList(table: ReadonlyMap<string, number> | undefined): string {
  return [...(table ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, id]) => `${name}: ${id}\n`).join('');
}

export function agentUnixctlCommands(target: AgentControlTarget): [string, UnixctlCommand][] {
  const plain = (run: () => UnixctlResult | Promise<UnixctlResult>, usage = ''): UnixctlCommand => ({ usage, argsMin: 0, argsMax: 0, run });
  const recompute = plain(async () => {
    await target.runtime()?.recompute();
    return unixctlOk();
  });
  return [
    // Whether the SB is connected: ovn_conn_show's two answers.
    ['connection-status', plain(() => unixctlOk(target.runtime()?.state?.state === 'connected' ? 'connected' : 'not connected'))],
    // OVN 23.03 lists `recompute` as deprecated beside inc-engine/recompute; both stay.
    ['recompute', { ...recompute, usage: '[deprecated]' }],
    ['inc-engine/recompute', recompute],
    // "USER ZONE" per line: ports and "<datapath uuid>_dnat"/"_snat" (ct_zone_list); in name order.
    ['ct-zone-list', plain(() => unixctlOk([...(target.runtime()?.flowSide?.ctZones?.() ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([user, zone]) => `${user} ${zone}\n`).join('')))],
    ['meter-table-list', plain(() => unixctlOk(tableList(target.runtime()?.flowSide?.extendTables?.().meters)))],
    ['group-table-list', plain(() => unixctlOk(tableList(target.runtime()?.flowSide?.extendTables?.().groups)))],
    ['debug/status', plain(() => unixctlOk(target.runtime()?.paused === true ? 'paused' : 'running'))],
    ['debug/pause', plain(() => {
      const r = target.runtime();
      if (r === undefined) return notStarted();
      r.pause();
      return unixctlOk();
    })],
    ['debug/resume', plain(() => {
      const r = target.runtime();
      if (r === undefined) return notStarted();
      r.resume();
      return unixctlOk();
    })],
    ['sb-cluster-state-reset', plain(() => {
      const r = target.runtime();
      if (r === undefined) return notStarted();
      return r.resync() ? unixctlOk() : unixctlError('this agent\'s SB source cannot start over');
    })],
    // ovn_controller_exit: one optional argument, and only "--restart" means restart.
    ['exit', {
      usage: '',
      argsMin: 0,
      argsMax: 1,
      run: (args) => {
        setImmediate(() => target.exit(args.length === 1 && args[0] === '--restart'));
        return unixctlOk();
      },
    }],
  ];
}
