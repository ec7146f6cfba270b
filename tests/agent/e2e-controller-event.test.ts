// The empty load balancer event with real packets (ovn-kubernetes' unidling): a TCP SYN to a VIP
// without backends of a load balancer with options:event=true becomes this chassis's SB
// Controller_Event row naming the VIP, its protocol and the load balancer; a second SYN writes
// no second row; once the CMS deleted the row the next SYN writes a new one, numbered higher; a
// VIP with backends writes nothing. Method: `ovnts up`, the real ovn-nbctl and ovn-sbctl against
// the cluster's doors, a userspace ovs-vswitchd run by `ovnts agent` or, the second time, by the
// real ovn-controller 23.03 (which writes the rows through our SB door); the SYNs are bash's
// /dev/tcp connects from a VM's namespace. Absence is shown against a barrier: a SYN to another
// empty VIP sent after, whose row can only come once the agent has dealt with the earlier packet.
import t from 'tap';
import type { Test } from 'tap';
import { clusterWithHv1, e2eSkip, nbctlOf, pingBecomes, sbctlOf, untilLogged, type ChassisRunner } from '../helpers/agent-e2e.js';
import type { NsHost } from '../helpers/netns.js';

const WAIT_MS = 60_000;

/** A Controller_Event row as ovn-sbctl lists it. */
interface EventRow {
  readonly uuid: string;
  readonly chassis: string;
  readonly eventType: string;
  readonly info: Readonly<Record<string, string>>;
  readonly seqNum: number;
}

/** Every Controller_Event row, from `ovn-sbctl --format=json list`. */
async function eventRows(sbctl: (...args: string[]) => Promise<string>): Promise<EventRow[]> {
  const out = JSON.parse(await sbctl('--format=json', '--columns=_uuid,chassis,event_info,event_type,seq_num', 'list', 'Controller_Event')) as { data: unknown[][] };
  return out.data.map(([uuid, chassis, info, eventType, seqNum]) => ({
    uuid: (uuid as [string, string])[1],
    chassis: (chassis as [string, unknown])[0] === 'uuid' ? (chassis as [string, string])[1] : '',
    info: Object.fromEntries((info as [string, [string, string][]])[1]),
    eventType: eventType as string,
    seqNum: seqNum as number,
  }));
}

/** One TCP SYN from `vm` to ip:port: a connect that nothing answers, given up after half a second. */
async function syn(vm: NsHost, ip: string, port: number): Promise<void> {
  await vm.exec('bash', '-c', `timeout 0.5 bash -c ': </dev/tcp/${ip}/${port}' 2>/dev/null; exit 0`);
}

async function emptyVipEvents(t: Test, runner: ChassisRunner, prefix: string, n: number): Promise<void> {
  const { env, hv1, agents } = await clusterWithHv1(t, runner, prefix);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  const hex = n.toString(16).padStart(2, '0');
  const net = `10.${n}.0`;
  await nbctl('ls-add', 'sw0');
  const vms: NsHost[] = [];
  for (const i of [2, 3]) {
    const mac = `0a:00:00:00:${hex}:0${i}`;
    await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `${mac} ${net}.${i}`);
    vms.push(await hv1.addVm(`vm${i}`, { mac, cidr: `${net}.${i}/24` }));
  }
  const [vm1] = vms as [NsHost, NsHost];
  await pingBecomes(vm1, `${net}.3`, true, 'vm2 reaches vm3', agents);

  // The VIPs are on the VMs' subnet and nobody answers ARP for them: vm1 knows a MAC for each.
  const vip = `${net}.100`;
  const busyVip = `${net}.110`;
  for (const ip of [vip, busyVip]) await vm1.exec('ip', 'neigh', 'replace', ip, 'lladdr', `0a:00:00:00:${hex}:99`, 'dev', 'eth0');
  await nbctl('--event', 'lb-add', 'idle', `${vip}:80`, '', 'tcp');
  // More VIPs without backends: each a barrier, written only after what was sent before it.
  for (const port of [81, 82]) await nbctl('lb-add', 'idle', `${vip}:${port}`, '');
  await nbctl('--event', 'lb-add', 'busy', `${busyVip}:80`, `${net}.3:8080`, 'tcp');
  await nbctl('ls-lb-add', 'sw0', 'idle', '--', 'ls-lb-add', 'sw0', 'busy');
  const idle = (await nbctl('--bare', '--columns=_uuid', 'find', 'Load_Balancer', 'name=idle')).trim();
  const chassis = (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', `name=${hv1.name}`)).trim();
  await nbctl('--wait=hv', 'sync');

  const rowsOf = async (port: number): Promise<EventRow[]> => (await eventRows(sbctl)).filter((r) => r.info.vip === `${vip}:${port}`);
  const firstRowOf = async (what: string, port: number, after: number): Promise<EventRow> => untilLogged(what, async () => {
    await syn(vm1, vip, port);
    return (await rowsOf(port)).find((r) => r.seqNum > after);
  }, WAIT_MS, agents);

  // The first SYN (repeated until the flows are in) writes the row.
  const started = Date.now();
  const first = await firstRowOf('a Controller_Event row for the VIP', 80, 0);
  t.comment(`${runner}: the row ${Date.now() - started} ms after the first SYN`);
  t.same({ ...first, uuid: undefined, seqNum: undefined }, {
    uuid: undefined, seqNum: undefined, chassis, eventType: 'empty_lb_backends', info: { vip: `${vip}:80`, protocol: 'tcp', load_balancer: idle },
  }, 'this chassis, the VIP with its port, its protocol and its load balancer');

  // Another SYN to it, then one to a second VIP: once that one's row is there, the first SYN's
  // packet-in has been dealt with, and it wrote nothing.
  await syn(vm1, vip, 80);
  const barrier1 = await firstRowOf('the second VIP\'s row', 81, 0);
  t.same((await rowsOf(80)).map((r) => r.uuid), [first.uuid], 'a second SYN to the VIP writes no second row');

  // The CMS handled the event and deletes the row: the next SYN writes a new one, numbered higher.
  await sbctl('destroy', 'Controller_Event', first.uuid);
  const again = await firstRowOf('a new row once the CMS deleted the first', 80, 0);
  t.not(again.uuid, first.uuid, 'a new row');
  if (runner === 'ovnts agent') t.ok(again.seqNum > Math.max(first.seqNum, barrier1.seqNum), `numbered after every row before it (${first.seqNum}, ${barrier1.seqNum}, then ${again.seqNum})`);
  else t.comment(`ovn-controller numbered them ${first.seqNum}, ${barrier1.seqNum}, then ${again.seqNum}`);

  // A VIP with a backend (and options:event=true) raises no event.
  await syn(vm1, busyVip, 80);
  await firstRowOf('the third VIP\'s row', 82, 0);
  t.same((await eventRows(sbctl)).filter((r) => r.info.vip === `${busyVip}:80`), [], 'a VIP with backends writes nothing');
  t.equal((await eventRows(sbctl)).filter((r) => r.chassis !== chassis).length, 0, 'every row is this chassis\'s');
}

t.test('empty VIP events written by our agent: once per VIP, again after the CMS deleted it, none for a VIP with backends', { skip: e2eSkip }, async (t) => {
  await emptyVipEvents(t, 'ovnts agent', '172.30.48', 48);
});

t.test('the same with the real ovn-controller 23.03 writing the rows through our SB door', { skip: e2eSkip }, async (t) => {
  await emptyVipEvents(t, 'ovn-controller', '172.30.49', 49);
});
