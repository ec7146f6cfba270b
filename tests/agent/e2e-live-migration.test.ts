// A VM migrating live between two chassis, with real packets: a 3-member cluster (`ovnts up`),
// the real ovn-nbctl and ovn-sbctl through the OVSDB doors, chassis that are network namespaces
// with their own ovs-vswitchd (userspace datapath), VMs in namespaces. While the port's
// requested-chassis is "source,destination" the port is bound on both: the source as its main
// chassis, the destination as an additional one, and what is sent to the port reaches the VM on
// both (each answers: the ping sees duplicates). Named alone at the destination, the port moves
// there whole. First with our agent on both chassis (without and with activation-strategy=rarp:
// the destination VM kept off the port until its RARP, which our agent records in the SB),
// then with the real ovn-controller 23.03 as
// the destination under activation-strategy=rarp: it joins additional_chassis by a "mutate"
// through our SB door, keeps the VM off the port until the VM sends a RARP, then writes
// options:additional-chassis-activated through our door, and our agent on the source copies the
// port's traffic to it. Processes are stopped by pid, namespaces are the test's own.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Agent } from '../helpers/agent-e2e.js';
import { chassisWithOvnController, e2eSkip, nbctlOf, pingBecomes, sbctlOf, startChassisWithAgents, untilLogged } from '../helpers/agent-e2e.js';
import type { ChassisHost } from '../helpers/chassis-host.js';
import { createUnderlay } from '../helpers/chassis-host.js';
import type { UpEnv } from '../helpers/ovnts-cli.js';
import type { NsHost } from '../helpers/netns.js';
import { until, upCluster } from '../helpers/ovnts-cli.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
const skip = e2eSkip !== false ? e2eSkip : existsSync('/usr/bin/ovn-controller') ? false : 'ovn-controller (ovn-host) is not installed';

async function binding(sbctl: (...args: string[]) => Promise<string>, port: string): Promise<{ chassis: string; additional: string }> {
  const column = (name: string): Promise<string> => sbctl('--bare', `--columns=${name}`, 'find', 'Port_Binding', `logical_port=${port}`);
  return { chassis: await column('chassis'), additional: await column('additional_chassis') };
}

/** A RARP request from `vm`'s eth0 for its own MAC, as a resumed VM announces itself. */
async function sendRarp(vm: NsHost, mac: string): Promise<void> {
  const script = [
    'import socket, struct',
    's = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)',
    's.bind(("eth0", 0))',
    `m = bytes.fromhex("${mac.replaceAll(':', '')}")`,
    'f = b"\\xff" * 6 + m + struct.pack("!H", 0x8035) + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 3) + m + bytes(4) + m + bytes(4)',
    's.send(f.ljust(60, bytes(1)))',
  ].join('\n');
  await vm.exec('python3', '-c', script);
}

/** The ICMP echo requests `vm`'s network namespace has received (its /proc/net/snmp InEchos). */
async function echoRequests(vm: NsHost): Promise<number> {
  const lines = (await vm.exec('cat', '/proc/net/snmp')).split('\n').filter((l) => l.startsWith('Icmp:'));
  const [names, values] = lines.map((l) => l.trim().split(/\s+/));
  return Number(values?.[names?.indexOf('InEchos') ?? -1]);
}

/** Pings `ip` from `from` 5 times; how many of those echo requests each of `vms` received. */
async function receivedDuringPings(from: NsHost, ip: string, vms: readonly NsHost[]): Promise<number[]> {
  const before = await Promise.all(vms.map(echoRequests));
  for (let i = 0; i < 5; i++) await from.ping(ip, 2);
  const after = await Promise.all(vms.map(echoRequests));
  return after.map((n, i) => n - (before[i] as number));
}

/**
 * sw0 with vm1 (requested on hv1, its VM there) and vm2 (its VM on `clientHost`), 10.N.0.1 and
 * .2, once vm2 pings vm1; with hv1's Chassis UUID.
 */
async function vmOnHv1(env: UpEnv, n: number, hv1: ChassisHost, clientHost: ChassisHost, agents: readonly Agent[]): Promise<{ source: NsHost; client: NsHost; hv1Uuid: string }> {
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', `0a:00:00:00:${n}:01 10.${n}.0.1`, '--', 'lsp-set-options', 'vm1', 'requested-chassis=hv1');
  await nbctl('lsp-add', 'sw0', 'vm2', '--', 'lsp-set-addresses', 'vm2', `0a:00:00:00:${n}:02 10.${n}.0.2`);
  const source = await hv1.addVm('vm1', { mac: `0a:00:00:00:${n}:01`, cidr: `10.${n}.0.1/24` });
  const client = await clientHost.addVm('vm2', { mac: `0a:00:00:00:${n}:02`, cidr: `10.${n}.0.2/24` });
  await pingBecomes(client, `10.${n}.0.1`, true, `vm2 on ${clientHost.name} pings vm1 on hv1`, agents);
  return { source, client, hv1Uuid: await sbctlOf(env)('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1') };
}

t.test('our agents: the port bound on both chassis while it migrates, its traffic reaching both VMs, then moved', { skip }, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const ul = await createUnderlay('172.30.43');
  t.teardown(() => ul.remove());
  const { hosts: [hv1, hv2], agents } = await startChassisWithAgents(t, env, ul, ['hv1', 'hv2']);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  const { source, client, hv1Uuid } = await vmOnHv1(env, 43, hv1, hv2, agents);
  const hv2Uuid = await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2');

  // The destination VM starts on hv2 (same MAC and IP) and the CMS asks for both chassis.
  const destination = await hv2.addVm('vm1', { mac: '0a:00:00:00:43:01', cidr: '10.43.0.1/24' });
  await nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv1,hv2');
  await untilLogged('vm1 bound on hv1 and, as an additional chassis, on hv2', async () => {
    const b = await binding(sbctl, 'vm1');
    return b.chassis === hv1Uuid && b.additional === hv2Uuid ? true : undefined;
  }, 60_000, agents);
  t.equal(await sbctl('--bare', '--columns=requested_additional_chassis', 'find', 'Port_Binding', 'logical_port=vm1'), hv2Uuid, 'northd resolved the additional chassis');
  t.equal(await nbctl('lsp-get-up', 'vm1'), 'up', 'the port stays up');
  await untilLogged('ovn-installed on the destination interface', async () => ((await hv2.ovs.vsctl('--bare', '--columns=external_ids', 'find', 'Interface', 'external_ids:iface-id=vm1')).includes('ovn-installed=true') ? true : undefined), 30_000, agents);
  // Pings from hv2's client reach both copies: the local one, and over the tunnel the source.
  await pingBecomes(client, '10.43.0.1', true, 'vm2 still pings vm1', agents);
  const [toSource, toDestination] = await receivedDuringPings(client, '10.43.0.1', [source, destination]);
  t.ok((toSource as number) >= 5 && (toDestination as number) >= 5, `both VMs receive the port's traffic (source ${String(toSource)}, destination ${String(toDestination)} echo requests)`);

  // The migration completes: the destination alone. hv2 claims the port and leaves the set.
  await nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv2');
  await untilLogged('vm1 moved to hv2', async () => {
    const b = await binding(sbctl, 'vm1');
    return b.chassis === hv2Uuid && b.additional === '' ? true : undefined;
  }, 60_000, agents);
  await hv1.detachVm(source);
  await untilLogged('vm1 up on hv2', async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' ? true : undefined), 30_000, agents);
  await pingBecomes(client, '10.43.0.1', true, 'vm2 pings vm1, now beside it on hv2', agents);
  const [after] = await receivedDuringPings(client, '10.43.0.1', [source]);
  t.equal(after, 0, 'the source VM gets nothing any more');
});

t.test('our agents under activation-strategy=rarp: the destination VM is kept off the port until its RARP, which our agent records in the SB', { skip }, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const ul = await createUnderlay('172.30.45');
  t.teardown(() => ul.remove());
  const { hosts: [hv1, hv2], agents } = await startChassisWithAgents(t, env, ul, ['hv1', 'hv2']);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  const { source, client, hv1Uuid } = await vmOnHv1(env, 45, hv1, hv1, agents);
  const hv2Uuid = await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2');
  const destination = await hv2.addVm('vm1', { mac: '0a:00:00:00:45:01', cidr: '10.45.0.1/24' });
  await nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv1,hv2', 'activation-strategy=rarp');
  await untilLogged('vm1 bound on hv1 and, as an additional chassis, on hv2', async () => {
    const b = await binding(sbctl, 'vm1');
    return b.chassis === hv1Uuid && b.additional === hv2Uuid ? true : undefined;
  }, 60_000, agents);
  await untilLogged('ovn-installed on the destination interface', async () => ((await hv2.ovs.vsctl('--bare', '--columns=external_ids', 'find', 'Interface', 'external_ids:iface-id=vm1')).includes('ovn-installed=true') ? true : undefined), 30_000, agents);
  const [toSource, blocked] = await receivedDuringPings(client, '10.45.0.1', [source, destination]);
  t.ok((toSource as number) >= 5, `the source VM gets the port's traffic (${String(toSource)} echo requests)`);
  t.equal(blocked, 0, 'the destination VM gets nothing before its RARP');
  await sendRarp(destination, '0a:00:00:00:45:01');
  await untilLogged('the activation in the SB', async () => (
    (await sbctl('--bare', '--columns=options', 'find', 'Port_Binding', 'logical_port=vm1')).includes('additional-chassis-activated=hv2') ? true : undefined), 30_000, agents);
  t.pass('our agent wrote options:additional-chassis-activated=hv2');
  const counts = await untilLogged('the destination VM gets the traffic', async () => {
    const c = await receivedDuringPings(client, '10.45.0.1', [source, destination]);
    return (c[0] as number) >= 5 && (c[1] as number) >= 5 ? c : undefined;
  }, 30_000, agents);
  t.ok(counts.every((n) => n >= 5), `after its RARP both VMs receive the port's traffic (${counts.join(', ')} echo requests)`);
});

t.test('the real ovn-controller as the destination: it joins additional_chassis through our SB door and gets the port\'s traffic', { skip }, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const ul = await createUnderlay('172.30.44');
  t.teardown(() => ul.remove());
  const { hosts: [hv1], agents } = await startChassisWithAgents(t, env, ul, ['hv1']);
  const { host: hv2, log } = await chassisWithOvnController(t, env, ul, 'hv2', 2);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  const { source, client, hv1Uuid } = await vmOnHv1(env, 44, hv1, hv1, agents);
  const hv2Uuid = await until(() => `hv2 registered (log: ${log()})`, async () => (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2')) || undefined, 60_000);

  const destination = await hv2.addVm('vm1', { mac: '0a:00:00:00:44:01', cidr: '10.44.0.1/24' });
  await nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv1,hv2', 'activation-strategy=rarp');
  await until(() => `ovn-controller joins vm1's additional chassis (log: ${log()})`, async () => {
    const b = await binding(sbctl, 'vm1');
    return b.chassis === hv1Uuid && b.additional === hv2Uuid ? true : undefined;
  }, 60_000);
  t.pass('its mutate of additional_chassis went through our SB door');
  await untilLogged('hv1 has a tunnel to hv2', async () => ((await hv1.ovs.vsctl('--bare', '--columns=name', 'find', 'Interface', 'type=geneve')) !== '' ? true : undefined), 60_000, agents);
  // activation-strategy=rarp: ovn-controller keeps the destination VM off the port until the VM
  // sends a RARP (as QEMU does when it resumes), then writes options:additional-chassis-activated.
  let table0 = '';
  await until(() => `ovn-controller installs the blocking flows (table 0: ${table0}; log: ${log()})`, async () => {
    table0 = (await run('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-flows', '--no-stats', join(hv2.ovs.dir, 'br-int.mgmt'), 'table=0'])).stdout;
    return /priority=1010,.*(rarp|0x8035)/.test(table0) ? true : undefined;
  }, 20_000);
  const [, blocked] = await receivedDuringPings(client, '10.44.0.1', [source, destination]);
  t.equal(blocked, 0, 'before its RARP the destination VM gets nothing');
  await sendRarp(destination, '0a:00:00:00:44:01');
  await until(() => `ovn-controller's activation through our SB door (log: ${log()})`, async () => (
    (await sbctl('--bare', '--columns=options', 'find', 'Port_Binding', 'logical_port=vm1')).includes('additional-chassis-activated=hv2') ? true : undefined), 60_000);
  t.pass('options:additional-chassis-activated=hv2 written by ovn-controller and shown by our northd');
  t.notMatch(log(), /additional-chassis-activated[^\n]*(error|denied)|permission error/, 'and no refused transaction in its log');
  // Our agent on hv1 (the main chassis) copies what it delivers to vm1 over to hv2.
  const counts = await until(() => `the copy reaches the destination VM (log: ${log()})`, async () => {
    const c = await receivedDuringPings(client, '10.44.0.1', [source, destination]);
    return (c[0] as number) >= 5 && (c[1] as number) >= 5 ? c : undefined;
  }, 60_000);
  t.ok(counts.every((n) => n >= 5), `both VMs receive the port's traffic (${counts.join(', ')} echo requests)`);

  // Done: hv2 alone. ovn-controller claims the port as main and leaves the set; our agent lets go.
  await nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv2');
  await until(() => `vm1 moved to hv2 (log: ${log()})`, async () => {
    const b = await binding(sbctl, 'vm1');
    return b.chassis === hv2Uuid && b.additional === '' ? true : undefined;
  }, 60_000);
  await hv1.detachVm(source);
  await until(() => `vm1 up on hv2 (log: ${log()})`, async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' ? true : undefined), 60_000);
  await pingBecomes(client, '10.44.0.1', true, 'vm2 on hv1 pings vm1, now on hv2', agents);
});
