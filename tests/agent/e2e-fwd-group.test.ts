// Forwarding groups with real packets: a 3-member cluster, the real ovn-nbctl, one chassis whose
// switch holds a client and three children that all own the group's VIP and virtual MAC (each
// namespace's interface has the vmac; a child's name is what its UDP server answers). The client
// ARPs for the VIP and gets the vmac from the switch's responder (ls_in_arp_rsp); UDP from 32
// fixed source ports to the VIP is spread over the children by the select group's dp_hash
// (ls_in_l2_lkup's fwd_group); a child taken out of the group gets nothing more. Two of the
// children have tunnel keys of 10 or more: with `ovnts agent` they answer like the first, while
// the real ovn-controller 23.03, run on the same cluster as the oracle, loads their keys as
// "0x%d" (10 as 0x10 = 16) and they receive nothing: the departure fwd-group.ts describes.
// Liveness needs a BFD session on the tunnel to a child's chassis, which neither ovn-controller
// nor our agent starts for forwarding groups: it is covered by tests/agent/flows-fwd-group and
// the golden actions, not here.
import t from 'tap';
import type { Test } from 'tap';
import { brIntOfctl, clusterWithHv1, e2eSkip, nbctlOf, sbctlOf, untilLogged, nodeInNs, type ChassisRunner } from '../helpers/agent-e2e.js';
import type { NsHost } from '../helpers/netns.js';

const VMAC = '00:11:de:ad:be:ef';
const UDP_PORT = 7000;
/** Source ports of the client's probes: fixed, so each probe is the same flow every round. */
const SOURCE_PORTS = Array.from({ length: 32 }, (_, i) => 41000 + i);
const CHILDREN = ['c1', 'c2', 'c3'] as const;

/** A UDP server in `vm` answering each datagram with `name`. */
function serveUdp(t: Test, vm: NsHost, name: string): void {
  nodeInNs(t, vm, `const s = require('dgram').createSocket('udp4'); s.on('message', (m, r) => s.send(${JSON.stringify(name)}, r.port, r.address)); s.bind(${UDP_PORT}, '0.0.0.0')`);
}

/** One datagram from each source port to `ip`, all at once; each port's answer, or "none" after a second. */
async function probe(vm: NsHost, src: string, ip: string): Promise<string[]> {
  const script = `
    const dgram = require('dgram');
    const one = (port) => new Promise((done) => {
      const s = dgram.createSocket('udp4');
      const timer = setTimeout(() => { s.close(); done('none'); }, 1000);
      s.on('message', (m) => { clearTimeout(timer); s.close(); done(m.toString()); });
      s.on('error', () => { clearTimeout(timer); s.close(); done('error'); });
      s.bind(port, ${JSON.stringify(src)}, () => s.send('who', ${UDP_PORT}, ${JSON.stringify(ip)}));
    });
    Promise.all(${JSON.stringify(SOURCE_PORTS)}.map(one)).then((a) => console.log(JSON.stringify(a)));`;
  return JSON.parse(await vm.exec(process.execPath, '-e', script)) as string[];
}

const tally = (answers: readonly string[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const a of answers) out[a] = (out[a] ?? 0) + 1;
  return out;
};

/**
 * sw0 with the client (key 1), c1 (key 2), seven unbound fillers (keys 3..9), c2 and c3 (10 and
 * 11), the children sharing the VIP and vmac; the group fg1 over the three. Returns the hosts.
 */
async function forwardingGroup(t: Test, runner: ChassisRunner, prefix: string, n: number) {
  const { env, hv1, agents } = await clusterWithHv1(t, runner, prefix);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  const net = `10.${n}.0`;
  const vip = `${net}.100`;
  const clientMac = `0a:00:00:00:${n}:01`;
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'client', '--', 'lsp-set-addresses', 'client', `${clientMac} ${net}.2`);
  // A child's port names an address of its own; its interface answers to the vmac, which only
  // the group's flow sends to (an LSP address of the vmac would compete with that flow).
  const childPort = async (name: string, i: number): Promise<void> => {
    await nbctl('lsp-add', 'sw0', name, '--', 'lsp-set-addresses', name, `0a:00:00:00:${n}:1${i}`);
  };
  await childPort('c1', 1);
  for (let k = 3; k <= 9; k++) await nbctl('lsp-add', 'sw0', `filler${k}`);
  await childPort('c2', 2);
  await childPort('c3', 3);
  const keys: Record<string, number> = {};
  for (const c of CHILDREN) {
    keys[c] = Number(await untilLogged(`${c} has a Port_Binding`, async () => {
      const k = await sbctl('--bare', '--columns=tunnel_key', 'find', 'Port_Binding', `logical_port=${c}`);
      return k === '' ? undefined : k;
    }, 30_000, agents));
  }
  const client = await hv1.addVm('client', { mac: clientMac, cidr: `${net}.2/24` });
  const children = new Map<string, NsHost>();
  for (const c of CHILDREN) {
    const vm = await hv1.addVm(c, { mac: VMAC, cidr: `${vip}/24` });
    // Their own ARP request would come from the vmac and its reply go to any child: the client's
    // address is known to them beforehand.
    await vm.exec('ip', 'neigh', 'replace', `${net}.2`, 'lladdr', clientMac, 'nud', 'permanent', 'dev', 'eth0');
    serveUdp(t, vm, c);
    children.set(c, vm);
  }
  await nbctl('fwd-group-add', 'fg1', 'sw0', vip, VMAC, ...CHILDREN);
  return { nbctl, hv1, agents, client, children, keys, vip, src: `${net}.2` };
}

t.test('ovnts agent: the VIP answered with the vmac, flows spread over the children, a child taken out gets nothing', { skip: e2eSkip }, async (t) => {
  const { nbctl, hv1, agents, client, keys, vip, src } = await forwardingGroup(t, 'ovnts agent', '172.30.61', 61);
  t.ok(keys.c1 !== undefined && keys.c1 < 10 && (keys.c2 ?? 0) >= 10 && (keys.c3 ?? 0) >= 10, `children's keys on both sides of 10: ${JSON.stringify(keys)}`);

  const spread = await untilLogged('every child answers some of the flows to the VIP', async () => {
    const answers = await probe(client, src, vip);
    return CHILDREN.every((c) => answers.includes(c)) && answers.every((a) => (CHILDREN as readonly string[]).includes(a)) ? answers : undefined;
  }, 60_000, agents);
  t.comment(`answers per child: ${JSON.stringify(tally(spread))}`);
  t.pass('all 32 flows answered, each by a child, every child by some');
  t.match(await client.exec('ip', 'neigh', 'show', vip), new RegExp(VMAC), 'the VIP resolved to the vmac (the switch\'s ARP responder)');
  const again = await probe(client, src, vip);
  t.same(again, spread, 'each flow keeps to its child (dp_hash over the same 5-tuple)');
  const groups = await brIntOfctl(hv1, 'dump-groups');
  for (const c of CHILDREN) t.match(groups, new RegExp(`set_field:0x${(keys[c] ?? 0).toString(16)}/0xffff->reg15,resubmit\\(,37\\)`), `a bucket loads ${c}'s key ${keys[c]}`);
  t.match(groups, /type=select,selection_method=dp_hash/);

  await nbctl('remove', 'Forwarding_Group', 'fg1', 'child_port', 'c3');
  const without = await untilLogged('c3 answers no flow once taken out of the group', async () => {
    const answers = await probe(client, src, vip);
    return answers.every((a) => a === 'c1' || a === 'c2') ? answers : undefined;
  }, 60_000, agents);
  t.ok(without.includes('c1') && without.includes('c2'), `c1 and c2 share the flows: ${JSON.stringify(tally(without))}`);
  t.notMatch(await brIntOfctl(hv1, 'dump-groups'), new RegExp(`set_field:0x${(keys.c3 ?? 0).toString(16)}/0xffff->reg15`), 'c3\'s bucket is gone from the switch');

  await nbctl('fwd-group-del', 'fg1');
  await untilLogged('nothing answers at the VIP once the group is gone', async () => {
    const answers = await probe(client, src, vip);
    return answers.every((a) => a === 'none') ? true : undefined;
  }, 60_000, agents);
  t.pass('no flow reaches a child without the group');
});

t.test('the real ovn-controller 23.03: children with keys of 10 or more receive nothing', { skip: e2eSkip }, async (t) => {
  const { hv1, client, keys, vip, src } = await forwardingGroup(t, 'ovn-controller', '172.30.62', 62);
  const groups = await untilLogged('ovn-controller installs the group', async () => {
    const g = await brIntOfctl(hv1, 'dump-groups');
    return /selection_method=dp_hash/.test(g) ? g : undefined;
  }, 60_000, []);
  // "load=0x%d": key 10 is loaded as 0x10 (16), key 11 as 0x11 (17); no port has those keys.
  for (const c of ['c2', 'c3'] as const) t.match(groups, new RegExp(`set_field:0x${keys[c]}/0xffff->reg15`), `${c}'s key ${keys[c]} loaded as 0x${keys[c]}`);
  const answers = await untilLogged('c1 answers some flows', async () => {
    const a = await probe(client, src, vip);
    return a.includes('c1') ? a : undefined;
  }, 60_000, []);
  t.comment(`answers: ${JSON.stringify(tally(answers))}`);
  t.ok(answers.every((a) => a === 'c1' || a === 'none'), 'only c1 answers');
  t.ok(answers.includes('none'), 'the flows hashed to c2 or c3 are lost');
});
