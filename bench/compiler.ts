// bench/compiler: the logical-flow compiler on the 10,000-port NB topology (bench/lib/nb-workload.ts).
// Part 1, ours end to end: the SB Logical_Flow rows our northd computes, compiled from scratch
// (fresh context, empty memo) a few times, and one changed flow compiled alone.
// Part 2, beside the real thing (when OVN 23.03 and OVS are installed; BENCH_REAL=0 skips it):
// the same topology loaded into a real ovn-northd, whose ~47,000 logical flows are compiled by
// a real ovn-controller (one VIF bound; every datapath is local through the router) and by
// ours. ovn-controller's figure is its `flow-generation` stopwatch (ms resolution) for a forced
// full recompute (inc-engine/recompute) and for one Logical_Flow inserted into the SB (northd
// paused). Ours is timed on the same rows, read back from the real SB (BENCH_REAL_SB_SAVE=file
// keeps them; BENCH_REAL_SB=file compiles a saved SB instead of running the real OVN).
// Times: CPU time of this process (process.cpuUsage) is the figure to compare on a shared
// machine; wall-clock is shown beside it. A sha256 of every compiled flow's text checks that a
// compiler change gives the same flows on the whole corpus.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopPid } from '../bin/lib/pids.js';
import { compileLogicalFlow, createCompileMemo, formatFlow, sbCompileContext, type FlowCompileContext, type LogicalFlowRow, type SbTables } from '../agent/compile/index.js';
import type { FlowSpec } from '../agent/openflow/types.js';
import { buildSymtab } from '../agent/expr/index.js';
import type { Symtab } from '../agent/expr/symbols.js';
import type { Row } from '../ovsdb/index.js';
import { JsonRpcClient } from '../tests/helpers/jsonrpc-client.js';
import { loadTopology, tenThousandPorts } from './lib/nb-workload.js';
import { ourSbOf } from './lib/our-sb.js';
import { fmt, median, percentile, printFigures, printTable } from './lib/report.js';

const fullRuns = Number(process.env.BENCH_FULL_RUNS ?? 5);
const oneRuns = Number(process.env.BENCH_ONE_RUNS ?? 20_000);
const realRuns = Number(process.env.BENCH_REAL_RUNS ?? 3);
const wantReal = process.env.BENCH_REAL !== '0';
/** Where to save the real SB once read (JSON), and where to load one from instead of running
 *  the real ovn-northd and ovn-controller (then there are no ovn-controller figures). Loading
 *  a saved SB makes the whole-corpus hash below comparable across compiler changes. */
const saveRealSb = process.env.BENCH_REAL_SB_SAVE;
const loadRealSb = process.env.BENCH_REAL_SB;
const fullGoalS = 1;
const goalFlows = 50_000;
const oneGoalUs = 50;

interface CompileRun {
  readonly ofFlows: number;
  readonly errors: string[];
  /** Wall-clock time; on a shared machine it counts other processes' turns too. */
  readonly ms: number;
  /** CPU time of this process (process.cpuUsage, user + system) while compiling, GC included. */
  readonly cpuMs: number;
  /** sha256 of every flow as formatFlow prints it (cookies shown), in compile order, when asked. */
  readonly sha256?: string;
}

/** Compiles every row from scratch: a fresh context (and memo, unless disabled). With 'hash',
 *  also renders every flow and hashes the text (outside the timed part), so a change to the
 *  compiler can be checked to give the same flows on the whole corpus. */
function compileAll(tables: SbTables, rows: readonly LogicalFlowRow[], symtab: Symtab, useMemo: boolean,
  extra: Partial<FlowCompileContext> = {}, hash = false): CompileRun {
  let conj = 0;
  const groups = new Map<string, number>();
  const ctx: FlowCompileContext = {
    ...sbCompileContext(tables, {
      symtab,
      extraAddressSets: new Map([['svc_monitor_mac', ['0a:00:00:00:00:fe']]]),
      conjIdOfs: (k) => {
        const o = conj;
        conj += k;
        return o;
      },
      groupId: (d) => {
        if (!groups.has(d)) groups.set(d, groups.size + 1);
        return groups.get(d);
      },
    }),
    ...(useMemo ? { memo: createCompileMemo() } : {}),
    ...extra,
  };
  const kept: FlowSpec[][] = [];
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let ofFlows = 0;
  const errors: string[] = [];
  for (const r of rows) {
    const out = compileLogicalFlow(r, ctx);
    if ('error' in out) {
      errors.push(out.error);
    } else {
      ofFlows += out.flows.length;
      if (hash) kept.push(out.flows);
    }
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const run = { ofFlows, errors, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
  if (!hash) return run;
  const h = createHash('sha256');
  for (const flows of kept) for (const f of flows) h.update(`${formatFlow(f, { cookie: true })}\n`);
  return { ...run, sha256: h.digest('hex') };
}

/** One changed flow: a new row (new UUID, priority and match text, so no memo entry serves it)
 *  compiled alone, as an incremental update would; the context and memo already exist. */
function oneChangedUs(tables: SbTables, rows: readonly LogicalFlowRow[], symtab: Symtab): number {
  const ctx: FlowCompileContext = {
    ...sbCompileContext(tables, { symtab, extraAddressSets: new Map([['svc_monitor_mac', ['0a:00:00:00:00:fe']]]), conjIdOfs: () => 0, groupId: () => 1 }),
    memo: createCompileMemo(),
  };
  const sample = rows.find((r) => r.match.startsWith('eth.dst ==') && r.actions.startsWith('outport')) ?? rows[0];
  if (sample === undefined) throw new Error('no logical flows');
  const us: number[] = [];
  for (let i = 0; i < oneRuns; i++) {
    const mac = `0a:ff:${[(i >> 24) & 0xff, (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
    const changed: LogicalFlowRow = {
      ...sample, _uuid: `${(i >>> 0).toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`,
      priority: 1 + (i % 1000), match: `eth.dst == ${mac}`,
    };
    const t0 = performance.now();
    const out = compileLogicalFlow(changed, ctx);
    us.push((performance.now() - t0) * 1000);
    if ('error' in out) throw new Error(out.error);
  }
  return median(us.slice(Math.floor(oneRuns / 10)));
}

async function ourNorthdSb(): Promise<{ tables: SbTables; rows: LogicalFlowRow[] }> {
  const tables = await ourSbOf(tenThousandPorts);
  return { tables, rows: [...(tables.get('Logical_Flow')?.values() ?? [])] as unknown as LogicalFlowRow[] };
}

// ---- The real OVN 23.03 side -----------------------------------------------------------------

interface RealFigures {
  readonly lflows: number;
  readonly controllerFullMs: readonly number[];
  readonly controllerOneMs: readonly number[];
  readonly controllerOfFlows: number;
  readonly tables: SbTables;
  readonly rows: LogicalFlowRow[];
  /** Port keys ovn-controller treats as related (bound here, or not a VIF), by datapath UUID. */
  readonly related: ReadonlyMap<string, ReadonlySet<number>>;
}

function ovnInstalled(): boolean {
  for (const bin of ['ovn-controller', 'ovn-northd', 'ovs-vswitchd', 'ovsdb-server']) {
    try {
      execFileSync(bin, ['--version'], { stdio: 'ignore' });
    } catch {
      return false;
    }
  }
  return existsSync('/usr/share/ovn/ovn-sb.ovsschema') && existsSync('/usr/share/openvswitch/vswitch.ovsschema');
}

/** An RFC 7047 datum as our row model holds it (sets as arrays, maps as Maps, UUIDs as text). */
function datum(v: unknown): unknown {
  if (!Array.isArray(v)) return v;
  if (v[0] === 'uuid' || v[0] === 'named-uuid') return v[1];
  if (v[0] === 'set') return (v[1] as unknown[]).map(datum);
  if (v[0] === 'map') return new Map((v[1] as [unknown, unknown][]).map(([k, x]) => [datum(k), datum(x)]));
  return v;
}

const setColumns = new Set(['logical_datapath', 'logical_dp_group', 'controller_meter', 'addresses', 'ports', 'datapaths', 'chassis']);

const sbTableNames = ['Logical_Flow', 'Datapath_Binding', 'Port_Binding', 'Multicast_Group', 'Address_Set', 'Port_Group', 'Logical_DP_Group'];

/** The SB tables the compiler reads, as `select` returned them (RFC 7047 rows). */
type RawSb = Record<string, Record<string, unknown>[]>;

async function readSbRaw(socket: string): Promise<RawSb> {
  const c = await JsonRpcClient.connect({ path: socket });
  try {
    const res = await c.request('transact', ['OVN_Southbound', ...sbTableNames.map((table) => ({ op: 'select', table, where: [] }))]) as { rows: Record<string, unknown>[] }[];
    return Object.fromEntries(sbTableNames.map((name, i) => [name, res[i]?.rows ?? []]));
  } finally {
    await c.close();
  }
}

function sbTablesOf(raw: RawSb): SbTables {
  const out = new Map<string, Map<string, Row>>();
  for (const name of sbTableNames) {
    const m = new Map<string, Row>();
    for (const r of raw[name] ?? []) {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) {
        let x = datum(v);
        if (setColumns.has(k) && !Array.isArray(x)) x = x === undefined ? [] : [x];
        o[k] = x;
      }
      m.set(o._uuid as string, o as unknown as Row);
    }
    out.set(name, m);
  }
  return out;
}

/** Port keys ovn-controller treats as related on a chassis binding only 'vif' (bound here, or
 *  not a VIF), by datapath UUID. */
function relatedPorts(tables: SbTables, vif: string): Map<string, Set<number>> {
  const related = new Map<string, Set<number>>();
  for (const p of tables.get('Port_Binding')?.values() ?? []) {
    const pb = p as unknown as { datapath: string; tunnel_key: number; type: string; logical_port: string };
    if (pb.type !== '' || pb.logical_port === vif) {
      let keys = related.get(pb.datapath);
      if (keys === undefined) related.set(pb.datapath, (keys = new Set()));
      keys.add(pb.tunnel_key);
    }
  }
  return related;
}

function stopwatchMaxMs(appctl: (...a: string[]) => string): { samples: number; maxMs: number } {
  const text = appctl('stopwatch/show', 'flow-generation');
  const samples = Number(/Total samples: (\d+)/.exec(text)?.[1] ?? 0);
  const maxMs = Number(/Maximum: (\d+(?:\.\d+)?) msec/.exec(text)?.[1] ?? NaN);
  return { samples, maxMs };
}

async function sleepMs(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

async function realSide(): Promise<RealFigures | string> {
  if (!ovnInstalled()) return 'OVN 23.03 / Open vSwitch not installed';
  const dir = mkdtempSync(join(tmpdir(), 'ovnc-'));
  const env = { ...process.env, OVS_RUNDIR: dir, OVS_DBDIR: dir, OVS_LOGDIR: dir, OVS_SYSCONFDIR: dir, OVN_RUNDIR: dir, OVN_DBDIR: dir, OVN_LOGDIR: dir };
  const run = (cmd: string, ...args: string[]): string => execFileSync(cmd, args, { env, encoding: 'utf8', maxBuffer: 1 << 30, timeout: 600_000 });
  const pidFiles: string[] = [];
  const daemon = (cmd: string, name: string, ...args: string[]): void => {
    const pidFile = join(dir, `${name}.pid`);
    pidFiles.push(pidFile);
    run(cmd, ...args, `--pidfile=${pidFile}`, `--log-file=${join(dir, `${name}.log`)}`, '--detach');
  };
  try {
    run('ovsdb-tool', 'create', join(dir, 'conf.db'), '/usr/share/openvswitch/vswitch.ovsschema');
    run('ovsdb-tool', 'create', join(dir, 'nb.db'), '/usr/share/ovn/ovn-nb.ovsschema');
    run('ovsdb-tool', 'create', join(dir, 'sb.db'), '/usr/share/ovn/ovn-sb.ovsschema');
    for (const [name, db, sock] of [['ovsdb-vs', 'conf.db', 'db.sock'], ['ovsdb-nb', 'nb.db', 'nb.sock'], ['ovsdb-sb', 'sb.db', 'sb.sock']] as const) {
      daemon('ovsdb-server', name, join(dir, db), `--remote=punix:${join(dir, sock)}`, `--unixctl=${join(dir, `${name}.ctl`)}`);
    }
    const vsctl = (...a: string[]): string => run('ovs-vsctl', `--db=unix:${join(dir, 'db.sock')}`, ...a);
    vsctl('--no-wait', 'init');
    daemon('ovs-vswitchd', 'vswitchd', `unix:${join(dir, 'db.sock')}`, '--enable-dummy=override', '--disable-system', `--unixctl=${join(dir, 'vswitchd.ctl')}`);
    vsctl('add-br', 'br-int', '--', 'set', 'bridge', 'br-int', 'datapath_type=netdev', 'fail-mode=secure');
    vsctl('set', 'open', '.', 'external_ids:system-id=hv1', `external_ids:ovn-remote=unix:${join(dir, 'sb.sock')}`,
      'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1');
    daemon('ovn-northd', 'northd', `--ovnnb-db=unix:${join(dir, 'nb.sock')}`, `--ovnsb-db=unix:${join(dir, 'sb.sock')}`, `--unixctl=${join(dir, 'northd.ctl')}`);
    const nb = await JsonRpcClient.connect({ path: join(dir, 'nb.sock') });
    try {
      await loadTopology(async (ops) => (await nb.request('transact', ['OVN_Northbound', ...ops])) as unknown[], tenThousandPorts);
    } finally {
      await nb.close();
    }
    run('ovn-nbctl', `--db=unix:${join(dir, 'nb.sock')}`, '--timeout=600', '--wait=sb', 'sync');
    vsctl('add-port', 'br-int', 'vif0', '--', 'set', 'interface', 'vif0', 'external_ids:iface-id=ls0-p0');
    daemon('ovn-controller', 'controller', `unix:${join(dir, 'db.sock')}`);
    const ofctl = (): string => run('ovs-ofctl', '-O', 'OpenFlow15', 'dump-flows', `unix:${join(dir, 'br-int.mgmt')}`, '--no-stats');
    let prev = -1;
    for (let i = 0; i < 300; i++) {
      await sleepMs(2000);
      const n = ofctl().split('\n').length;
      if (n === prev && n > 1000) break;
      prev = n;
    }
    const pid = readFileSync(join(dir, 'controller.pid'), 'utf8').trim();
    const appctl = (...a: string[]): string => run('ovn-appctl', '-t', join(dir, `ovn-controller.${pid}.ctl`), ...a);
    const controllerFullMs: number[] = [];
    for (let i = 0; i < realRuns; i++) {
      appctl('stopwatch/reset');
      appctl('inc-engine/recompute');
      await sleepMs(500);
      for (let k = 0; k < 120 && stopwatchMaxMs(appctl).samples === 0; k++) await sleepMs(500);
      await sleepMs(3000);
      controllerFullMs.push(stopwatchMaxMs(appctl).maxMs);
    }
    // Counted after the recomputes: the first stable state can predate the port's binding.
    const controllerOfFlows = ofctl().split('\n').filter((l) => {
      const t = Number(/table=(\d+)/.exec(l)?.[1] ?? 0);
      return (t >= 8 && t <= 36) || (t >= 42 && t <= 63);
    }).length;
    const raw = await readSbRaw(join(dir, 'sb.sock'));
    if (saveRealSb !== undefined) writeFileSync(saveRealSb, JSON.stringify(raw));
    const tables = sbTablesOf(raw);
    const rows = [...(tables.get('Logical_Flow')?.values() ?? [])] as unknown as LogicalFlowRow[];
    // One changed flow: northd paused (so it does not remove it), one Logical_Flow inserted.
    run('ovn-appctl', '-t', join(dir, 'northd.ctl'), 'pause');
    const ls0 = [...(tables.get('Datapath_Binding')?.values() ?? [])].find((d) => (d.external_ids as ReadonlyMap<string, string>).get('name') === 'ls0');
    const controllerOneMs: number[] = [];
    for (let i = 0; ls0 !== undefined && i < 5; i++) {
      appctl('stopwatch/reset');
      run('ovn-sbctl', `--db=unix:${join(dir, 'sb.sock')}`, 'create', 'Logical_Flow', `logical_datapath=${ls0._uuid}`, 'pipeline=ingress',
        'table_id=25', 'priority=55', `match="eth.dst == 0a:fe:00:00:00:0${i}"`, 'actions="outport = \\"ls0-p1\\"; output;"');
      await sleepMs(1500);
      controllerOneMs.push(stopwatchMaxMs(appctl).maxMs);
    }
    return { lflows: rows.length, controllerFullMs, controllerOneMs, controllerOfFlows, tables, rows, related: relatedPorts(tables, 'ls0-p0') };
  } catch (e) {
    return `real OVN run failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  } finally {
    for (const f of [...pidFiles].reverse()) {
      if (!existsSync(f)) continue;
      const pid = Number(readFileSync(f, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0) await stopPid(pid, (argv) => argv.some((a) => a.includes(dir)));
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- Report ----------------------------------------------------------------------------------

/** The real SB from a file saved by BENCH_REAL_SB_SAVE: no ovn-controller figures. */
function savedRealSide(path: string): RealFigures {
  const tables = sbTablesOf(JSON.parse(readFileSync(path, 'utf8')) as RawSb);
  const rows = [...(tables.get('Logical_Flow')?.values() ?? [])] as unknown as LogicalFlowRow[];
  return { lflows: rows.length, controllerFullMs: [], controllerOneMs: [], controllerOfFlows: NaN, tables, rows, related: relatedPorts(tables, 'ls0-p0') };
}

const range = (xs: readonly number[]): string => (xs.length === 0 ? 'n/a' : `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`);

async function main(): Promise<void> {
  const symtab = buildSymtab();
  const ours = await ourNorthdSb();
  const warm = compileAll(ours.tables, ours.rows, symtab, true, {}, true);
  const full: CompileRun[] = [];
  for (let i = 0; i < fullRuns; i++) full.push(compileAll(ours.tables, ours.rows, symtab, true));
  const plainMs = [compileAll(ours.tables, ours.rows, symtab, false).ms, compileAll(ours.tables, ours.rows, symtab, false).ms];
  const fullMs = full.map((r) => r.ms);
  const fullCpuMs = full.map((r) => r.cpuMs);
  const fullMedMs = median(fullMs);
  const perS = ours.rows.length / (median(fullCpuMs) / 1000);
  const oneUs = oneChangedUs(ours.tables, ours.rows, symtab);

  const real = loadRealSb !== undefined ? savedRealSide(loadRealSb) : wantReal ? await realSide() : 'skipped (BENCH_REAL=0)';
  const measuredController = typeof real !== 'string' && real.controllerFullMs.length > 0;
  const na = typeof real === 'string' ? real : '';
  let onReal: { warm: CompileRun; medMs: number; cpuMs: number[]; filteredOf: number; rowUs: number[] } | undefined;
  if (typeof real !== 'string') {
    const related = { isRelatedPort: (dp: string, key: number): boolean => real.related.get(dp)?.has(key) === true };
    const warmReal = compileAll(real.tables, real.rows, symtab, true, related, true);
    const runs: CompileRun[] = [];
    for (let i = 0; i < fullRuns; i++) runs.push(compileAll(real.tables, real.rows, symtab, true, related));
    // Each real row as a changed flow: compiled alone, for all its datapaths, with an empty memo.
    const base = sbCompileContext(real.tables, { symtab, conjIdOfs: () => 0, groupId: () => 1 });
    const rowUs: number[] = [];
    for (const r of real.rows) {
      const t0 = performance.now();
      compileLogicalFlow(r, { ...base, ...related, memo: createCompileMemo() });
      rowUs.push((performance.now() - t0) * 1000);
    }
    onReal = { warm: warmReal, medMs: median(runs.map((r) => r.ms)), cpuMs: runs.map((r) => r.cpuMs), filteredOf: warmReal.ofFlows, rowUs };
  }
  const realRow = (s: string): string => (typeof real === 'string' ? 'not measured' : s);
  const ctlRow = (s: string): string => (measuredController ? s : 'not measured');
  const realLflows = typeof real === 'string' ? 0 : real.lflows;

  printTable('logical-flow compiler, 10,000-port topology, our northd\'s logical flows', [
    ['', 'ovnts', 'goal'],
    ['logical flows', fmt(ours.rows.length), ''],
    ['OpenFlow flows produced', fmt(warm.ofFlows), ''],
    ['flows that failed to compile', fmt(warm.errors.length), '0'],
    ['full compile from scratch, CPU time median (ms)', fmt(median(fullCpuMs), 1), ''],
    ['  CPU time range over runs (ms)', range(fullCpuMs), ''],
    ['  wall-clock median (ms)', fmt(fullMedMs, 1), ''],
    ['  without the memo, wall-clock (ms)', fmt(median(plainMs), 1), ''],
    ['logical flows per CPU-second', fmt(perS), ''],
    ['projected: 50,000 flows (CPU s)', fmt(goalFlows / perS, 3), `<= ${fullGoalS}`],
    ['one changed flow, median (µs)', fmt(oneUs, 1), `<= ${oneGoalUs}`],
  ]);
  printTable('the same topology through the real ovn-northd 23.03.1: ovnts vs ovn-controller 23.03.1', [
    ['', 'ovnts', 'ovn-controller', 'goal'],
    ['logical flows (real northd)', realRow(fmt(realLflows)), realRow(fmt(realLflows)), ''],
    ['flows that failed to compile', onReal ? fmt(onReal.warm.errors.length) : 'not measured', '', '0'],
    ['OpenFlow flows in logical tables', onReal ? fmt(onReal.filteredOf) : 'not measured', ctlRow(fmt(typeof real === 'string' ? 0 : real.controllerOfFlows)), ''],
    ['full compile, CPU time median (ms)', onReal ? fmt(median(onReal.cpuMs), 1) : 'not measured',
      ctlRow(`${fmt(median(typeof real === 'string' ? [] : real.controllerFullMs))} (flow-generation, wall)`), `<= ${fullGoalS * 1000}`],
    ['  CPU time range over runs (ms)', onReal ? range(onReal.cpuMs) : 'not measured', '', ''],
    ['  wall-clock median (ms)', onReal ? fmt(onReal.medMs, 1) : 'not measured', '', ''],
    ['one changed flow (ms, ovn-controller at 1 ms resolution)', fmt(oneUs / 1000, 4),
      ctlRow(((ms: number): string => (ms === 0 ? '< 1' : fmt(ms)))(median(typeof real === 'string' ? [] : real.controllerOneMs))), `<= ${oneGoalUs / 1000}`],
    ['each real row alone: median / p99 / max (µs)', onReal ? `${fmt(median(onReal.rowUs))} / ${fmt(percentile(onReal.rowUs, 99))} / ${fmt(Math.max(...onReal.rowUs))}` : 'not measured', '', ''],
  ]);
  if (na !== '') process.stdout.write(`\nreal OVN side: ${na}\n`);
  else process.stdout.write('\novn-controller\'s times are its flow-generation stopwatch (whole engine run: logical and physical\n'
    + 'flows, not installation). Its OpenFlow count is what it installed; ours skips switch flows for\n'
    + 'ports it does not treat as related (VIFs bound elsewhere), as ovn-controller does, approximately.\n');
  process.stdout.write('CPU time is process.cpuUsage() around the compile loop (GC included); on a shared machine\n'
    + 'wall-clock also counts other processes\' turns. The sha256 figures hash every flow as formatFlow\n'
    + 'prints it (cookies shown), in compile order: equal hashes = the same flows.\n');
  for (const e of [...warm.errors, ...(onReal?.warm.errors ?? [])].slice(0, 5)) process.stdout.write(`error: ${e}\n`);
  printFigures({
    lflows: ours.rows.length, of_flows: warm.ofFlows, errors: warm.errors.length, full_ms: fullMedMs,
    full_cpu_ms: median(fullCpuMs), full_cpu_min_ms: Math.min(...fullCpuMs), full_cpu_max_ms: Math.max(...fullCpuMs),
    lflows_per_cpu_s: Math.round(perS), projected_50k_cpu_s: goalFlows / perS, one_flow_us: oneUs,
    of_sha256: warm.sha256 ?? 'n/a',
    real_lflows: typeof real === 'string' ? 'n/a' : real.lflows,
    real_ours_full_ms: onReal ? onReal.medMs : 'n/a',
    real_ours_full_cpu_ms: onReal ? median(onReal.cpuMs) : 'n/a',
    real_ours_full_cpu_min_ms: onReal ? Math.min(...onReal.cpuMs) : 'n/a',
    real_ours_full_cpu_max_ms: onReal ? Math.max(...onReal.cpuMs) : 'n/a',
    real_ours_errors: onReal ? onReal.warm.errors.length : 'n/a',
    real_of_sha256: onReal?.warm.sha256 ?? 'n/a',
    real_row_median_us: onReal ? median(onReal.rowUs) : 'n/a',
    real_row_p99_us: onReal ? percentile(onReal.rowUs, 99) : 'n/a',
    ovn_controller_full_ms: measuredController ? median((real as RealFigures).controllerFullMs) : 'not_measured',
    ovn_controller_one_ms: measuredController ? median((real as RealFigures).controllerOneMs) : 'not_measured',
  });
}

await main();
