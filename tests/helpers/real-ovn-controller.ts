// A real ovn-controller on a bridge of its own (a userspace ovs-vswitchd started for the test),
// connected to an SB by unix socket, with dummy VIF ports bound to logical ports: the oracle the
// agent's flow tables are compared with. Stopped by pid with the test.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { until } from './ovnts-cli.js';
import { startOvsSwitch, type OvsSwitch } from './ovs-switch.js';
import { stopPid } from './process.js';

const run = promisify(execFile);

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
