// QoS and ACL-log meters end to end: a 3-member cluster, the real ovn-nbctl, `ovnts agent` on a
// chassis with its own ovs-vswitchd. QoS rules with a rate (and a burst, and a DSCP mark) and an
// ACL logging through an NB meter must show in `ovs-ofctl dump-meters` of br-int with their rate,
// burst and unit, and the VM's traffic must pass its QoS meter (meter-stats counts it); a band
// changed in the NB modifies the meter under the same id; removing the rules and the ACL deletes
// their meters. Every wait polls the switch, bounded.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { chassisWithAgent, e2eSkip, nbctlOf, pingBecomes, untilLogged } from '../helpers/agent-e2e.js';

const execFileAsync = promisify(execFile);
const WAIT_MS = 90_000;

t.test('QoS and ACL-log meters reach br-int; a band change modifies one, removing their flows deletes them', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.24');
  const nbctl = nbctlOf(env);
  const ofctl = async (cmd: string, ...args: string[]): Promise<string> =>
    (await execFileAsync('ovs-ofctl', ['-O', 'OpenFlow15', cmd, `unix:${path.join(hv1.ovs.dir, 'br-int.mgmt')}`, ...args])).stdout;
  /** dump-meters: id → "kbps burst stats bands= type=drop rate=… burst_size=…". */
  const meters = async (): Promise<Map<number, string>> => {
    const out = new Map<number, string>();
    for (const m of (await ofctl('dump-meters')).split(/\n(?=meter=)/)) {
      const r = /meter=(\d+) (.*)$/s.exec(m.trim());
      if (r !== null) out.set(Number(r[1]), (r[2] as string).replace(/\s+/g, ' ').trim());
    }
    return out;
  };
  const idOf = (ms: ReadonlyMap<number, string>, config: string): number | undefined => [...ms].find(([, c]) => c === config)?.[0];
  const metersBecome = (what: string, ok: (ms: ReadonlyMap<number, string>) => boolean): Promise<Map<number, string>> =>
    untilLogged(what, async () => {
      const ms = await meters();
      return ok(ms) ? ms : undefined;
    }, WAIT_MS, [agent]);

  await nbctl('ls-add', 'sw0');
  for (const i of [1, 2]) await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:24:0${i} 10.24.0.${i}`);
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:24:01', cidr: '10.24.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:24:02', cidr: '10.24.0.2/24' });
  await pingBecomes(vm1, '10.24.0.2', true, 'ping before any QoS', [agent]);

  await nbctl('qos-add', 'sw0', 'from-lport', '100', 'inport == "vm1"', 'rate=10000', 'burst=1000');
  await nbctl('qos-add', 'sw0', 'to-lport', '100', 'outport == "vm1" && ip4', 'rate=20000', 'dscp=10');
  await nbctl('meter-add', 'acl-meter', 'drop', '10', 'pktps');
  await nbctl('--log', '--meter=acl-meter', '--name=dns', 'acl-add', 'sw0', 'to-lport', '1000', 'udp.dst == 53', 'allow');
  await nbctl('--wait=hv', 'sync');
  const qosIn = 'kbps burst stats bands= type=drop rate=10000 burst_size=1000';
  const qosOut = 'kbps stats bands= type=drop rate=20000';
  const acl = 'pktps stats bands= type=drop rate=10';
  const ms = await metersBecome('the three meters', (m) => [qosIn, qosOut, acl].every((c) => idOf(m, c) !== undefined) && m.size === 3);
  t.pass(`dump-meters: ${[...ms].map(([id, c]) => `meter=${id} ${c}`).join(' | ')}`);
  const flows = await ofctl('dump-flows');
  t.match(flows, new RegExp(`actions=meter:${idOf(ms, qosIn)},resubmit`), 'vm1\'s ingress QoS flow meters through its meter');
  t.match(flows, new RegExp(`actions=meter:${idOf(ms, qosOut)},resubmit`), 'vm1\'s egress QoS flow too');
  t.match(flows, /set_field:10\/0x3f->ip_dscp/, 'the egress rule marks DSCP 10');
  t.match(flows, new RegExp(`controller\\(userdata=00\\.00\\.00\\.07\\.[0-9a-f.]*,meter_id=${idOf(ms, acl)}\\)`), 'the ACL\'s log goes through acl-meter');

  // vm1's pings pass its ingress QoS meter.
  await pingBecomes(vm1, '10.24.0.2', true, 'ping through the QoS meters', [agent]);
  const counted = await untilLogged('the ingress meter counts vm1\'s packets', async () => {
    const stats = await ofctl('meter-stats', `meter=${idOf(ms, qosIn)}`);
    const n = Number(/packet_in_count:(\d+)/.exec(stats)?.[1] ?? '0');
    return n > 0 ? n : undefined;
  }, WAIT_MS, [agent]);
  t.ok(counted > 0, `meter ${idOf(ms, qosIn)} counted ${counted} packets`);

  // A band changed in the NB: the same meter id, its new rate.
  const band = (await nbctl('--bare', '--columns=bands', 'find', 'Meter', 'name=acl-meter')).trim();
  await nbctl('set', 'Meter_Band', band, 'rate=20', 'burst_size=5');
  await nbctl('--wait=hv', 'sync');
  const changed = await metersBecome('acl-meter modified', (m) => m.get(idOf(ms, acl) as number) === 'pktps burst stats bands= type=drop rate=20 burst_size=5');
  t.equal(changed.size, 3, 'modified in place, under the same id');

  await nbctl('qos-del', 'sw0');
  await nbctl('--wait=hv', 'sync');
  const left = await metersBecome('the QoS meters deleted', (m) => m.size === 1);
  t.same([...left.keys()], [idOf(ms, acl)], 'only acl-meter is left');
  t.notMatch(await ofctl('dump-flows'), /meter:\d+/, 'no flow meters any more');
  await nbctl('acl-del', 'sw0');
  await nbctl('--wait=hv', 'sync');
  await metersBecome('no meter left once no flow names acl-meter', (m) => m.size === 0);
  t.pass('acl-meter deleted with its ACL (its NB meter is still there)');
});
