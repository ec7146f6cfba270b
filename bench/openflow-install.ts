// bench/openflow-install: N distinct flows installed into a real ovs-vswitchd (userspace
// datapath, private temp folder) through our OpenFlow 1.5 channel, in atomic bundles; then the
// same set dumped back, and a no-op reconcile (dump + diff) over all of it. Goal: ≥ 100,000
// flows/s installed. N=100000 by default; BUNDLE sets the flows per bundle (default: all in one).
// Beside our CPU time, ovs-vswitchd's (from /proc) shows which side sets the pace.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { formatIpv4, formatMac } from '../agent/expr/to-matches.js';
import { OfChannel } from '../agent/openflow/channel.js';
import type { FlowMod } from '../agent/openflow/messages.js';
import type { FlowSpec } from '../agent/openflow/types.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../tests/helpers/ovs-switch.js';
import { fmt, printFigures, printTable } from './lib/report.js';

const flowsN = Number(process.env.N ?? 100_000);
const bundleFlows = Number(process.env.BUNDLE ?? flowsN);
const goalFlowsPerS = 100_000;
/** ANCHOR=0 skips the ovs-ofctl comparison. */
const withAnchor = process.env.ANCHOR !== '0';

/** OVN-like flows: a logical datapath and port in metadata/reg14, an address match, a register
 *  load and a resubmit to the next stage. All distinct. */
function makeFlows(n: number): FlowSpec[] {
  const out: FlowSpec[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      table: 8 + (i % 4),
      priority: 100 + (i % 50),
      match: new Map([
        ['metadata', { value: BigInt(1 + (i >> 12)), mask: 0xffffffffffffffffn }],
        ['reg14', { value: BigInt(i & 0xfff), mask: 0xffffffffn }],
        ['eth_type', { value: 0x800n, mask: 0xffffn }],
        ['ipv4_dst', { value: BigInt(0x0a000000 + i), mask: 0xffffffffn }],
      ]),
      actions: [
        { kind: 'load', dst: { field: 'reg0', start: 0, end: 15 }, value: BigInt(i & 0xffff) },
        { kind: 'set_field', field: 'eth_dst', value: BigInt(0x0a0000000000 + i) },
        { kind: 'resubmit', table: 20 },
      ],
      cookie: BigInt(i),
    });
  }
  return out;
}

/** The same flows as ovs-ofctl text, for the anchor: `ovs-ofctl --bundle add-flows`. */
function flowsText(flows: readonly FlowSpec[]): string {
  return flows.map((f) => {
    const m = f.match;
    const a = f.actions;
    const load = a[0]?.kind === 'load' ? a[0].value : 0n;
    const mac = a[1]?.kind === 'set_field' ? a[1].value : 0n;
    return `table=${f.table},priority=${f.priority},cookie=${f.cookie},metadata=${m.get('metadata')?.value},reg14=${m.get('reg14')?.value},`
      + `ip,nw_dst=${formatIpv4(m.get('ipv4_dst')?.value ?? 0n)},actions=set_field:${load}/0xffff->reg0,set_field:${formatMac(mac)}->eth_dst,resubmit(,20)`;
  }).join('\n') + '\n';
}

const run = promisify(execFile);

/** A process's CPU time so far (utime + stime of /proc/PID/stat, in clock ticks of 1/100 s). */
function processCpuS(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The anchor: the same flows through ovs-ofctl (C, one bundle) into a fresh switch. */
async function ovsOfctlSeconds(flows: readonly FlowSpec[]): Promise<number> {
  const anchor = await startOvsSwitch();
  try {
    const file = join(anchor.dir, 'flows.txt');
    writeFileSync(file, flowsText(flows));
    const t0 = process.hrtime.bigint();
    await run('ovs-ofctl', ['-O', 'OpenFlow15', '--bundle', 'add-flows', anchor.mgmtTarget, file], { env: anchor.env });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    rmSync(file);
    return s;
  } finally {
    await anchor.stop();
  }
}

if (!ovsSwitchInstalled()) {
  printTable('OpenFlow install into ovs-vswitchd', [['figure', 'value'], ['ovs-vswitchd', 'not installed']]);
  printFigures({ flows: flowsN, flows_per_s: 'n/a' });
  process.exit(0);
}

const sw = await startOvsSwitch();
try {
  const ch = await OfChannel.connect({ target: sw.mgmtTarget, requestTimeoutMs: 300_000 });
  const flows = makeFlows(flowsN);
  const mods: FlowMod[] = flows.map((f) => ({ command: 'add', ...f }));

  const cpu0 = process.cpuUsage();
  const vswitchd0 = processCpuS(sw.vswitchdPid);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < mods.length; i += bundleFlows) await ch.installBatch(mods.slice(i, i + bundleFlows));
  const installS = Number(process.hrtime.bigint() - t0) / 1e9;
  const vswitchdCpuS = processCpuS(sw.vswitchdPid) - vswitchd0;
  const cpu = process.cpuUsage(cpu0);
  const clientCpuS = (cpu.user + cpu.system) / 1e6;

  const cpu1 = process.cpuUsage();
  const t1 = process.hrtime.bigint();
  const dumped = await ch.dumpFlows();
  const dumpS = Number(process.hrtime.bigint() - t1) / 1e9;
  const dumpCpu = process.cpuUsage(cpu1);
  const dumpCpuS = (dumpCpu.user + dumpCpu.system) / 1e6;

  const t2 = process.hrtime.bigint();
  const diff = await ch.reconcile(flows);
  const reconcileS = Number(process.hrtime.bigint() - t2) / 1e9;
  ch.close();

  const anchorS = withAnchor ? await ovsOfctlSeconds(flows) : NaN;

  if (dumped.length !== flowsN) throw new Error(`dumped ${dumped.length} flows, installed ${flowsN}`);
  if (diff.mods.length !== 0) throw new Error(`a no-op reconcile produced ${diff.mods.length} flow_mods`);

  const flowsPerS = flowsN / installS;
  printTable(`OpenFlow 1.5 install into ovs-vswitchd (${fmt(flowsN)} flows, ${fmt(Math.ceil(flowsN / bundleFlows))} bundle(s))`, [
    ['step', 'seconds', 'flows/s'],
    ['install (bundle open, adds, barrier, commit)', fmt(installS, 3), fmt(flowsPerS)],
    ['  of which our process on CPU (encode + write)', fmt(clientCpuS, 3), ''],
    ['  ovs-vswitchd on CPU meanwhile (parse, commit)', fmt(vswitchdCpuS, 3), ''],
    ['anchor: ovs-ofctl --bundle add-flows, same flows', fmt(anchorS, 3), fmt(flowsN / anchorS)],
    ['dump (flow-desc multipart)', fmt(dumpS, 3), fmt(flowsN / dumpS)],
    ['  of which our process on CPU (decode)', fmt(dumpCpuS, 3), ''],
    ['no-op reconcile (dump + diff)', fmt(reconcileS, 3), fmt(flowsN / reconcileS)],
    [`goal: install ≥ ${fmt(goalFlowsPerS)} flows/s`, '', flowsPerS >= goalFlowsPerS ? 'met' : 'not met'],
  ]);
  printFigures({
    flows: flowsN, bundle_flows: bundleFlows, install_s: installS, flows_per_s: Math.round(flowsPerS), client_cpu_s: clientCpuS, vswitchd_cpu_s: vswitchdCpuS,
    ovs_ofctl_s: withAnchor ? anchorS : 'skipped', ovs_ofctl_flows_per_s: withAnchor ? Math.round(flowsN / anchorS) : 'skipped', dump_s: dumpS, dump_cpu_s: dumpCpuS, reconcile_noop_s: reconcileS,
  });
} finally {
  await sw.stop();
}
