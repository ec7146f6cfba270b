// bench/agent-flows: the agent's flow side on the 10,000-port topology (bench/lib/nb-workload.ts)
// as one chassis of 100 sees it: every port bound to one of 100 chassis (ours binds 100 of them,
// tunnels to the 99 others), every datapath local through the router.
// Part 1: the desired flows from scratch (logical + physical), installed into the in-memory
// switch, then incremental updates (one port bound here, one logical flow added, one remote
// port moved), each measured end to end (recompute + batch + install).
// Part 2 (when Open vSwitch is installed; BENCH_REAL=0 skips it): the same flows installed into a
// real ovs-vswitchd through OfSwitch (bundles, barrier), and the incremental update there.
// Part 3: 500 agents in one process on a 500-port switch (one port each), over memory switches,
// sharing one compile cache.
// The anchor for the full computation is ovn-controller's flow-generation time in
// `npm run bench -- compiler` (same topology, real ovn-northd's flows); not re-run here.
import { AgentFlows } from '../agent/flows/agent-flows.js';
import { SharedCompileCache } from '../agent/flows/compile-cache.js';
import { DesiredFlows } from '../agent/flows/desired.js';
import { MemorySwitch } from '../agent/flows/memory-switch.js';
import { OfSwitch } from '../agent/flows/ofswitch.js';
import type { LocalView } from '../agent/local-view.js';
import { OfChannel } from '../agent/openflow/channel.js';
import type { SbRowChange, SbUpdate } from '../agent/sb-source.js';
import type { Row } from '../ovsdb/index.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../tests/helpers/ovs-switch.js';
import { tenThousandPorts } from './lib/nb-workload.js';
import { ourSbOf } from './lib/our-sb.js';
import { fmt, median, printFigures, printTable } from './lib/report.js';

const CHASSIS_N = 100;
const fullRuns = Number(process.env.BENCH_FULL_RUNS ?? 3);
const oneRuns = Number(process.env.BENCH_ONE_RUNS ?? 30);
const wantReal = process.env.BENCH_REAL !== '0';
const AGENTS_N = 500;

const uuid = (kind: number, n: number): string => `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

function chassisRow(i: number): Row {
  return {
    _uuid: uuid(0xc, i + 1), _version: uuid(0xc, i + 1), name: `ch${i}`, hostname: `ch${i}`, encaps: [], vtep_logical_switches: [], nb_cfg: 0,
    external_ids: new Map(), other_config: new Map(), transport_zones: [],
  } as unknown as Row;
}

/** Binds every VIF (type "") to one of CHASSIS_N chassis, round robin; returns the rows and
 *  the LocalView of chassis 0. */
function bind(tables: Map<string, Map<string, Row>>, chassisN: number): { changes: SbRowChange[]; view: LocalView; spare: Row[] } {
  const changes: SbRowChange[] = [];
  const vifs = new Map<string, number>();
  const spare: Row[] = [];
  for (let i = 0; i < chassisN; i++) changes.push({ table: 'Chassis', uuid: uuid(0xc, i + 1), row: chassisRow(i) });
  // The NB of the workload has no NB_Global, so northd derives no svc_monitor_mac set; a
  // cluster's SB always carries one (as bench/compiler supplies it too).
  if (![...(tables.get('Address_Set')?.values() ?? [])].some((r) => (r as unknown as { name: string }).name === 'svc_monitor_mac')) {
    changes.push({ table: 'Address_Set', uuid: uuid(0x5, 1), row: { _uuid: uuid(0x5, 1), _version: uuid(0x5, 1), name: 'svc_monitor_mac', addresses: ['0a:00:00:00:00:fe'] } as unknown as Row });
  }
  let k = 0;
  for (const [table, rows] of tables) {
    for (const r of rows.values()) {
      let row = r;
      if (table === 'Port_Binding' && (r as unknown as { type: string }).type === '') {
        const ch = k++ % chassisN;
        row = { ...r, chassis: [uuid(0xc, ch + 1)], _version: `${r._version}-b` } as unknown as Row;
        if (ch === 0) vifs.set((r as unknown as { logical_port: string }).logical_port, 1000 + vifs.size);
        else if (ch === 1 && spare.length < 200) spare.push(r);
      }
      changes.push({ table, uuid: r._uuid, row });
    }
  }
  const tunnels = new Map(Array.from({ length: chassisN - 1 }, (_, i) => [`ch${i + 1}`, { ofport: 10 + i, type: 'geneve', remoteIp: `192.0.2.${i + 1}` }] as const));
  return { changes, view: { chassis: 'ch0', vifs, tunnels, localnetPatches: new Map() }, spare };
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1e6;
}

async function main(): Promise<void> {
  const tables = await ourSbOf(tenThousandPorts);
  const { changes, view, spare } = bind(tables, CHASSIS_N);
  const snapshot: SbUpdate = { reset: true, fromRevision: 0, toRevision: 1, changes };
  const lflows = tables.get('Logical_Flow')?.size ?? 0;

  // Part 1: from scratch, then into the memory switch, then incremental updates.
  const fullMs: number[] = [];
  let flowsN = 0;
  let errorsN = 0;
  for (let i = 0; i < fullRuns; i++) {
    const d = new DesiredFlows();
    const t0 = performance.now();
    d.update(snapshot, view);
    fullMs.push(performance.now() - t0);
    flowsN = d.table.size;
    errorsN = d.sourceErrors().size;
  }
  const heap0 = heapMb();
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  let t0 = performance.now();
  const first = await af.apply(snapshot, view);
  const firstMs = performance.now() - t0;
  const heapAgent = heapMb() - heap0;
  let rev = 1;
  const bindHereMs: number[] = [];
  const lflowMs: number[] = [];
  const moveMs: number[] = [];
  const changesSent: number[] = [];
  let vifs = new Map(view.vifs);
  const anyLs = [...(tables.get('Datapath_Binding')?.values() ?? [])][0] as Row;
  for (let i = 0; i < oneRuns && i < spare.length; i++) {
    // A port arrives here: its binding names us, its interface appears.
    const p = spare[i] as Row;
    vifs = new Map(vifs).set((p as unknown as { logical_port: string }).logical_port, 5000 + i);
    const bound = { ...p, chassis: [uuid(0xc, 1)], _version: `${p._version}-h${i}` } as unknown as Row;
    t0 = performance.now();
    const r1 = await af.apply({ reset: false, fromRevision: rev, toRevision: ++rev, changes: [{ table: 'Port_Binding', uuid: p._uuid, row: bound }] }, { ...view, vifs });
    bindHereMs.push(performance.now() - t0);
    changesSent.push(r1.changes);
    // A logical flow appears on some switch.
    const lf = {
      _uuid: uuid(0x1f, i + 1), _version: uuid(0x1f, i + 1), logical_datapath: [anyLs._uuid], logical_dp_group: [], pipeline: 'ingress', table_id: 25,
      priority: 55, match: `eth.dst == 0a:fe:00:00:00:${(i % 256).toString(16).padStart(2, '0')}`, actions: 'next;', tags: new Map(), controller_meter: [], external_ids: new Map(),
    } as unknown as Row;
    t0 = performance.now();
    await af.apply({ reset: false, fromRevision: rev, toRevision: ++rev, changes: [{ table: 'Logical_Flow', uuid: lf._uuid, row: lf }] }, { ...view, vifs });
    lflowMs.push(performance.now() - t0);
    // A remote port moves to another remote chassis.
    const q = spare[spare.length - 1 - i] as Row;
    const moved = { ...q, chassis: [uuid(0xc, 3 + (i % 50))], _version: `${q._version}-m${i}` } as unknown as Row;
    t0 = performance.now();
    await af.apply({ reset: false, fromRevision: rev, toRevision: ++rev, changes: [{ table: 'Port_Binding', uuid: q._uuid, row: moved }] }, { ...view, vifs });
    moveMs.push(performance.now() - t0);
  }

  // Part 2: a real ovs-vswitchd.
  let realFirstMs = NaN;
  let realOneMs = NaN;
  let realNote = wantReal ? (ovsSwitchInstalled() ? '' : 'Open vSwitch is not installed') : 'skipped (BENCH_REAL=0)';
  if (realNote === '') {
    const ovs = await startOvsSwitch();
    try {
      const ch = await OfChannel.connect({ target: ovs.mgmtTarget });
      try {
        const real = new AgentFlows(new OfSwitch(ch));
        t0 = performance.now();
        const r = await real.apply(snapshot, view);
        realFirstMs = performance.now() - t0;
        if (r.errors.length > 0) realNote = `errors: ${r.errors.slice(0, 2).join('; ')}`;
        const p = spare[spare.length - 1] as Row;
        const bound = { ...p, chassis: [uuid(0xc, 1)], _version: `${p._version}-real` } as unknown as Row;
        t0 = performance.now();
        await real.apply({ reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'Port_Binding', uuid: p._uuid, row: bound }] },
          { ...view, vifs: new Map(view.vifs).set((p as unknown as { logical_port: string }).logical_port, 9999) });
        realOneMs = performance.now() - t0;
      } finally {
        ch.close();
      }
    } finally {
      await ovs.stop();
    }
  }

  // Part 3: 500 agents, one port each on a 500-port switch.
  const small = await ourSbOf({ switches: 1, portsPerSwitch: AGENTS_N, acls: 2 });
  const agentsBound = bind(small, AGENTS_N);
  const smallSnap: SbUpdate = { reset: true, fromRevision: 0, toRevision: 1, changes: agentsBound.changes };
  const heapBefore = heapMb();
  const agents: { af: AgentFlows; view: LocalView }[] = [];
  const vifOwner = new Map<string, number>();
  for (const c of agentsBound.changes) {
    if (c.table !== 'Port_Binding' || c.row === undefined) continue;
    const ch = (c.row as unknown as { chassis: string[] }).chassis[0];
    if (ch !== undefined) vifOwner.set((c.row as unknown as { logical_port: string }).logical_port, Number.parseInt(ch.slice(-12), 16) - 1);
  }
  // The agents of one simulation share one compile cache (compile-cache.ts).
  const cache = new SharedCompileCache();
  t0 = performance.now();
  let agentFlows = 0;
  for (let i = 0; i < AGENTS_N; i++) {
    const vifsI = new Map([...vifOwner].filter(([, o]) => o === i).map(([n]) => [n, 1] as const));
    const tunnels = new Map([...agentsBound.view.tunnels].map(([name, tp]) => [name, tp] as const).filter(([name]) => name !== `ch${i}`));
    if (i !== 0) tunnels.set('ch0', { ofport: 9, type: 'geneve', remoteIp: '192.0.2.250' });
    const v: LocalView = { chassis: `ch${i}`, vifs: vifsI, tunnels, localnetPatches: new Map() };
    const a = new AgentFlows(new MemorySwitch(), { sharedCache: cache });
    const r = await a.apply(smallSnap, v);
    agentFlows += r.flows;
    agents.push({ af: a, view: v });
  }
  const agentsUpMs = performance.now() - t0;
  const agentsHeapMb = heapMb() - heapBefore;
  const lsSmall = [...(small.get('Datapath_Binding')?.values() ?? [])][0] as Row;
  const newLf = {
    _uuid: uuid(0x2f, 1), _version: uuid(0x2f, 1), logical_datapath: [lsSmall._uuid], logical_dp_group: [], pipeline: 'ingress', table_id: 25,
    priority: 55, match: 'eth.dst == 0a:fe:00:00:00:01', actions: 'next;', tags: new Map(), controller_meter: [], external_ids: new Map(),
  } as unknown as Row;
  t0 = performance.now();
  for (const a of agents) await a.af.apply({ reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'Logical_Flow', uuid: newLf._uuid, row: newLf }] }, a.view);
  const agentsOneMs = performance.now() - t0;

  printTable('agent flows, 10,000-port topology, one chassis of 100 (100 ports bound here, 99 tunnels)', [
    ['', 'ovnts'],
    ['SB logical flows', fmt(lflows)],
    ['desired OpenFlow flows (logical + physical)', fmt(flowsN)],
    ['sources that failed', fmt(errorsN)],
    ['desired flows from scratch, median (ms)', fmt(median(fullMs), 1)],
    ['first apply into the memory switch, incl. compute (ms)', fmt(firstMs, 1)],
    ['heap of one agent\'s state (MB)', fmt(heapAgent, 1)],
    ['one port bound here: apply, median (ms)', fmt(median(bindHereMs), 2)],
    ['  changes sent, median', fmt(median(changesSent))],
    ['one logical flow added: apply, median (ms)', fmt(median(lflowMs), 2)],
    ['one remote port moved: apply, median (ms)', fmt(median(moveMs), 2)],
  ]);
  printTable('into a real ovs-vswitchd (OfSwitch: bundles + barrier)', [
    ['', 'ovnts'],
    ['first apply: compute + reconcile + install all flows (ms)', realNote === '' ? fmt(realFirstMs, 0) : realNote],
    ['one port bound here: compute + one bundle (ms)', realNote === '' ? fmt(realOneMs, 1) : realNote],
  ]);
  printTable(`${AGENTS_N} agents in one process (${AGENTS_N}-port switch, one port each, memory switches)`, [
    ['', 'ovnts'],
    ['flows per agent, mean', fmt(agentFlows / AGENTS_N)],
    ['all agents up, total (ms)', fmt(agentsUpMs, 0)],
    ['heap for all agents (MB)', fmt(agentsHeapMb, 1)],
    ['one logical flow to every agent, total (ms)', fmt(agentsOneMs, 1)],
    ['shared compile cache hits / misses', `${fmt(cache.counters.hits)} / ${fmt(cache.counters.misses)}`],
  ]);
  process.stdout.write(`\nfirst apply sent ${first.changes} flow and group changes. The anchor for the full computation is\n`
    + 'ovn-controller\'s flow-generation in `npm run bench -- compiler` (same topology); installation\n'
    + 'throughput of a real switch alone is `npm run bench -- openflow-install`.\n');
  printFigures({
    lflows, flows: flowsN, errors: errorsN, full_ms: median(fullMs), first_apply_ms: firstMs, agent_heap_mb: heapAgent,
    bind_here_ms: median(bindHereMs), lflow_added_ms: median(lflowMs), remote_move_ms: median(moveMs),
    real_first_ms: realFirstMs, real_one_ms: realOneMs, agents: AGENTS_N, agents_up_ms: agentsUpMs, agents_heap_mb: agentsHeapMb, agents_one_ms: agentsOneMs,
  });
}

await main();
