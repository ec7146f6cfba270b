// bench/nbctl-ops: what a CMS's everyday writes cost on a large Northbound, through the real
// ovn-nbctl, against our OVSDB door (a 3-member `ovnts up`) and against the real OVN 23.03
// (3-member clustered NB and SB ovsdb-servers and ovn-northd), in the same run.
//
// The NB, built on both sides by the same batched ovn-nbctl commands: one switch of NBCTL_PORTS
// (default 2,000) ports with addresses, a router with one port and NBCTL_PORTS/2 static routes, a
// port group holding every port with NBCTL_PORTS/2 ACLs, an address set of 2 x NBCTL_PORTS
// addresses, and a load balancer of NBCTL_PORTS VIPs on the switch.
//
// The operations, each one ovn-nbctl process (start, reading the NB, one transaction), timed
// without a wait and with --wait=sb (the SB reflects it: our projection, the real ovn-northd):
// a VM port added (lsp-add with addresses) and one deleted; a pod as ovn-kubernetes adds one (its
// port created, added to the switch and the port group, its IP added to the address set, in one
// transaction); an ACL added to the port group; a static route added; a VIP added to the load
// balancer. NBCTL_REPS (default 8) of each; NBCTL_RUNS (default 1) fresh clusters per side.
// Medians, and the real OVN's time over ours.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freeBasePort, readUpEnv } from '../tests/helpers/ovnts-cli.js';
import { stopPid } from '../tests/helpers/process.js';
import { startRealOvnCentral } from './lib/real-ovn-central.js';
import { fmt, median, printFigures, printTable } from './lib/report.js';

const run = promisify(execFile);
const ports = Number(process.env.NBCTL_PORTS ?? 2000);
const reps = Number(process.env.NBCTL_REPS ?? 8);
const runs = Number(process.env.NBCTL_RUNS ?? 1);
/** Commands per ovn-nbctl call while building the NB. */
const buildBatch = 400;
/** Output of `ovn-nbctl find` on a large NB, and a whole VIP map on one command line. */
const maxBuffer = 256 * 1024 * 1024;

const ovntsCmd = import.meta.url.endsWith('.ts')
  ? [process.execPath, '--import', 'tsx', fileURLToPath(new URL('../bin/ovnts.ts', import.meta.url))]
  : [process.execPath, fileURLToPath(new URL('../bin/ovnts.js', import.meta.url))];

const log = (m: string): void => void process.stderr.write(`bench/nbctl-ops: ${m}\n`);
const hex = (k: number): string => (k & 255).toString(16).padStart(2, '0');
const ip = (a: number, k: number): string => `10.${a}.${(k >> 8) & 255}.${k & 255}`;

interface Central {
  /** ovn-nbctl's --db: every member. */
  readonly db: string;
  stop(): Promise<void>;
}

async function upOurs(): Promise<Central> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-nbctl-'));
  await run(ovntsCmd[0] as string, [...ovntsCmd.slice(1), 'up', '--detach', `--data-dir=${dir}`, `--base-port=${await freeBasePort()}`], { timeout: 120_000 });
  const env = readUpEnv(dir);
  return {
    db: env.nbOvsdb.join(','),
    async stop() {
      for (const pid of env.pids) await stopPid(pid, (argv) => argv.includes('central') && argv.some((a) => a.startsWith(`--data-dir=${dir}`)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function upReal(): Promise<Central> {
  const c = await startRealOvnCentral(26750 + (process.pid % 40) * 10);
  return { db: c.nb, stop: () => c.stop() };
}

type Nbctl = (...args: string[]) => Promise<string>;

function nbctlOf(db: string): Nbctl {
  return async (...args) => (await run('ovn-nbctl', [`--db=${db}`, '--timeout=300', ...args], { maxBuffer })).stdout.trim();
}

/** Commands (each a list of words) run buildBatch at a time, joined by "--". */
async function batched(nbctl: Nbctl, commands: readonly (readonly string[])[]): Promise<void> {
  for (let i = 0; i < commands.length; i += buildBatch) {
    const words: string[] = [];
    for (const c of commands.slice(i, i + buildBatch)) words.push('--', ...c);
    await nbctl(...words.slice(1));
  }
}

async function buildNb(nbctl: Nbctl): Promise<void> {
  await nbctl('ls-add', 'sw0', '--', 'lr-add', 'lr0', '--', 'lrp-add', 'lr0', 'lrp0', '0a:00:00:00:00:01', '10.0.0.1/16', '--', 'pg-add', 'pg0',
    '--', 'create', 'Address_Set', 'name=as0');
  await batched(nbctl, Array.from({ length: ports }, (_, k) => ['lsp-add', 'sw0', `p${k}`, '--', 'lsp-set-addresses', `p${k}`, `0a:00:01:00:${hex(k >> 8)}:${hex(k)} ${ip(0, k)}`]));
  await nbctl('pg-set-ports', 'pg0', ...Array.from({ length: ports }, (_, k) => `p${k}`));
  await nbctl('set', 'Address_Set', 'as0', `addresses=[${Array.from({ length: 2 * ports }, (_, k) => `"${ip(8, k)}"`).join(',')}]`);
  await batched(nbctl, Array.from({ length: ports / 2 }, (_, k) => ['acl-add', 'pg0', 'to-lport', String(1000 + (k % 100)), `ip4.src == ${ip(9, k)} && tcp.dst == ${1000 + k}`, 'allow-related']));
  await batched(nbctl, Array.from({ length: ports / 2 }, (_, k) => ['lr-route-add', 'lr0', `192.${(k >> 8) & 255}.${k & 255}.0/24`, '10.0.0.254']));
  await nbctl('create', 'Load_Balancer', 'name=lb0', 'protocol=tcp', `vips={${Array.from({ length: ports }, (_, k) => `"172.16.${(k >> 8) & 255}.${k & 255}:80"="10.0.0.1:8080,10.0.0.2:8080"`).join(',')}}`);
  await nbctl('ls-lb-add', 'sw0', 'lb0');
  await nbctl('--wait=sb', 'sync');
}

/** One operation: the ovn-nbctl words of its k-th run (k counts over both wait modes). */
interface Op {
  readonly name: string;
  readonly what: string;
  words(k: number): string[];
}

const ops: readonly Op[] = [
  { name: 'lsp_add', what: 'lsp-add + lsp-set-addresses (a VM port)', words: (k) => ['lsp-add', 'sw0', `n${k}`, '--', 'lsp-set-addresses', `n${k}`, `0a:00:02:00:${hex(k >> 8)}:${hex(k)} ${ip(2, k)}`] },
  { name: 'lsp_del', what: 'lsp-del', words: (k) => ['lsp-del', `p${k}`] },
  {
    name: 'pod_add',
    what: 'a pod: port, switch, port group, address set in one transaction',
    words: (k) => ['--id=@p', 'create', 'Logical_Switch_Port', `name=pod${k}`, `addresses="0a:00:03:00:${hex(k >> 8)}:${hex(k)} ${ip(3, k)}"`,
      '--', 'add', 'Logical_Switch', 'sw0', 'ports', '@p', '--', 'add', 'Port_Group', 'pg0', 'ports', '@p', '--', 'add', 'Address_Set', 'as0', 'addresses', `"${ip(3, k)}"`],
  },
  { name: 'acl_add', what: 'acl-add to the port group', words: (k) => ['acl-add', 'pg0', 'to-lport', '1200', `ip4.src == ${ip(6, k)}`, 'drop'] },
  { name: 'route_add', what: 'lr-route-add', words: (k) => ['lr-route-add', 'lr0', `193.${(k >> 8) & 255}.${k & 255}.0/24`, '10.0.0.254'] },
  { name: 'vip_add', what: 'lb-add of one VIP to the load balancer', words: (k) => ['lb-add', 'lb0', `172.20.${(k >> 8) & 255}.${k & 255}:80`, '10.0.0.3:80'] },
];

const waits = [{ key: '', flag: [] as string[], label: 'no wait' }, { key: '_sb', flag: ['--wait=sb'], label: '--wait=sb' }] as const;

/** ms per run of each op and wait mode, keyed "<op><wait key>". */
type Times = Map<string, number[]>;

async function measure(side: 'ours' | 'real'): Promise<Times> {
  const central = side === 'ours' ? await upOurs() : await upReal();
  try {
    const nbctl = nbctlOf(central.db);
    if (side === 'ours') await nbctl('--wait=sb', 'sync');
    const t0 = performance.now();
    await buildNb(nbctl);
    log(`${side}: the NB built in ${fmt((performance.now() - t0) / 1000, 1)} s`);
    const times: Times = new Map();
    for (const op of ops) {
      let k = 0;
      for (const w of waits) {
        const ms: number[] = [];
        for (let i = 0; i < reps; i++) {
          const words = op.words(k++);
          const t = performance.now();
          await nbctl(...w.flag, ...words);
          ms.push(performance.now() - t);
        }
        times.set(`${op.name}${w.key}`, ms);
        log(`${side}: ${op.name} ${w.label} p50 ${fmt(median(ms), 1)} ms`);
      }
    }
    return times;
  } finally {
    await central.stop();
  }
}

async function main(): Promise<void> {
  log(`NBCTL_PORTS=${ports} NBCTL_REPS=${reps} NBCTL_RUNS=${runs}; the machine is shared: figures are noisy`);
  const ours: Times[] = [];
  const real: Times[] = [];
  for (let r = 0; r < runs; r++) {
    ours.push(await measure('ours'));
    real.push(await measure('real'));
  }
  // The median over runs of each run's median.
  const p50 = (xs: readonly Times[], key: string): number => median(xs.map((t) => median(t.get(key) ?? [])));
  const figures: Record<string, number> = { ports, reps, runs };
  const rows: string[][] = [['operation', 'wait', 'ours p50', 'real OVN p50', 'real / ours']];
  for (const op of ops) {
    for (const w of waits) {
      const key = `${op.name}${w.key}`;
      const o = p50(ours, key);
      const r = p50(real, key);
      rows.push([w.key === '' ? op.what : '', w.label, fmt(o, 1), fmt(r, 1), fmt(r / o, 2)]);
      figures[`${key}_ours_ms`] = o;
      figures[`${key}_real_ms`] = r;
      figures[`${key}_speedup`] = r / o;
    }
  }
  printTable(`One ovn-nbctl per operation on a large NB (${fmt(ports)} ports on a switch and in a port group, ${fmt(ports / 2)} ACLs, ${fmt(ports / 2)} routes, `
    + `${fmt(2 * ports)} addresses, ${fmt(ports)} VIPs); ms, median of ${reps} per run, median of ${runs} run(s); process start and NB read included`, rows);
  printFigures(figures);
}

await main();
