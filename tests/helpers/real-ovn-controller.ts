// The real OVN as an oracle for the agent's flow tables: a central (NB and SB ovsdb-servers and
// ovn-northd in a temp folder), and an ovn-controller on a bridge of its own (a userspace
// ovs-vswitchd started for the test) with dummy VIF ports bound to logical ports. Everything is
// stopped by pid with the test.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { until } from './ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from './ovs-switch.js';
import { stopPid } from './process.js';
import { startRealOvsdbServer, type RealOvsdbServer } from './real-ovsdb.js';

const run = promisify(execFile);

export const OVN_NB_SCHEMA = '/usr/share/ovn/ovn-nb.ovsschema';
export const OVN_SB_SCHEMA = '/usr/share/ovn/ovn-sb.ovsschema';

export interface RealCentral {
  readonly dir: string;
  readonly nb: RealOvsdbServer;
  readonly sb: RealOvsdbServer;
  nbctl(...a: string[]): Promise<string>;
  sbctl(...a: string[]): Promise<string>;
}

/** NB and SB ovsdb-servers with OVN's schemas and an ovn-northd between them, in a temp folder. */
export async function startRealCentral(t: Test, prefix: string): Promise<RealCentral> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const nb = await startRealOvsdbServer({ dir: join(dir, 'nb'), schemaPath: OVN_NB_SCHEMA });
  t.teardown(() => nb.stop());
  const sb = await startRealOvsdbServer({ dir: join(dir, 'sb'), schemaPath: OVN_SB_SCHEMA });
  t.teardown(() => sb.stop());
  const northdPid = join(dir, 'ovn-northd.pid');
  await run('ovn-northd', [`--ovnnb-db=unix:${nb.socketPath}`, `--ovnsb-db=unix:${sb.socketPath}`, '--detach', '--no-chdir',
    `--pidfile=${northdPid}`, `--log-file=${join(dir, 'ovn-northd.log')}`, `--unixctl=${join(dir, 'ovn-northd.ctl')}`, '-vconsole:off']);
  const northd = Number(readFileSync(northdPid, 'utf8').trim());
  t.teardown(() => stopPid(northd, (argv) => (argv[0] ?? '').endsWith('ovn-northd') && argv.some((a) => a.includes(dir))));
  return {
    dir, nb, sb,
    nbctl: async (...a) => (await run('ovn-nbctl', [`--db=unix:${nb.socketPath}`, '--timeout=60', ...a])).stdout,
    sbctl: async (...a) => (await run('ovn-sbctl', [`--db=unix:${sb.socketPath}`, '--timeout=60', ...a])).stdout,
  };
}

export interface RealController {
  readonly sw: OvsSwitch;
  readonly pid: number;
  /** The end of its log, for messages. */
  log(): string;
}

/**
 * Starts ovn-controller as chassis hv1 against `sbSocket`, adds a dummy interface per VM (its
 * ofport and iface-id) to br-int and waits until every VM's port is up (read through `nbctl`)
 * and the chassis has caught up (`--wait=hv sync`).
 */
export async function startRealController(t: Test, sbSocket: string, vms: readonly { readonly name: string; readonly ofport: number }[], nbctl: (...a: string[]) => Promise<string>): Promise<RealController> {
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', `external_ids:ovn-remote=unix:${sbSocket}`,
    'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev');
  const logFile = join(sw.dir, 'ovn-controller.log');
  await run('ovn-controller', [`unix:${join(sw.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off',
    `--pidfile=${join(sw.dir, 'ovn-controller.pid')}`, `--log-file=${logFile}`], { env: { ...sw.env, OVN_RUNDIR: sw.dir, OVN_LOGDIR: sw.dir, OVN_DBDIR: sw.dir } });
  const pid = Number(readFileSync(join(sw.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(pid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-1500) : '');
  for (const v of vms) {
    await sw.vsctl('add-port', 'br-int', `vif${v.ofport}`, '--', 'set', 'interface', `vif${v.ofport}`, 'type=dummy',
      `ofport_request=${v.ofport}`, `external_ids:iface-id=${v.name}`);
  }
  for (const v of vms) {
    await until(() => `${v.name} up (ovn-controller log: ${log()})`, async () => ((await nbctl('lsp-get-up', v.name)).trim() === 'up' ? true : undefined), 60_000);
  }
  await nbctl('--wait=hv', 'sync');
  return { sw, pid, log };
}

/** Whether the real OVN 23.03 (controller, northd, the ctl tools and schemas) and Open vSwitch are installed. */
export function realOvnInstalled(): boolean {
  return ovsSwitchInstalled() && ['/usr/bin/ovn-controller', '/usr/bin/ovn-northd', '/usr/bin/ovn-nbctl', '/usr/bin/ovn-sbctl'].every((p) => existsSync(p))
    && existsSync(OVN_NB_SCHEMA) && existsSync(OVN_SB_SCHEMA);
}

/** Two VMs on switch sw0 for the comparisons with a real ovn-controller: name, ofport, addresses. */
export const twoVms = [
  { name: 'vm1', ofport: 1, addr: '00:00:00:00:00:01 10.0.0.1 fd00::1' },
  { name: 'vm2', ofport: 2, addr: '00:00:00:00:00:02 10.0.0.2 fd00::2' },
] as const;
