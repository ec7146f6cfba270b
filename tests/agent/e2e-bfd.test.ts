// BFD with real packets: a gateway router's static route watched by a BFD session to its next
// hop comes in once the chassis's session with the next hop is up, and goes when the next hop
// stops answering. Method: `ovnts up`, the real ovn-nbctl / ovn-sbctl against the cluster's
// doors, a userspace ovs-vswitchd run by `ovnts agent` or, the second time, by the real
// ovn-controller 23.03 (which writes BFD.status through our SB door). The next hop is a namespace on the
// router's outside switch running a small BFD speaker (a Node script: RFC 5880's three-way
// handshake, asynchronous mode, no authentication), started and stopped by pid; behind it, on
// its loopback, the network the route leads to.
import t from 'tap';
import type { Test } from 'tap';
import { clusterWithHv1, e2eSkip, linkSwitchToRouter, nbctlOf, nodeInNs, pingBecomes, sbctlOf, untilLogged, type ChassisRunner } from '../helpers/agent-e2e.js';

const WAIT_MS = 90_000;

/**
 * A BFD speaker in `host`'s namespace: one session per peer address, sending every 200 ms
 * (desired min TX and required min RX 200 ms, multiplier 3) from port 49152 to 3784.
 */
const SPEAKER = `
const dgram = require('dgram');
const rx = dgram.createSocket('udp4');
const tx = dgram.createSocket('udp4');
const sessions = new Map();
const myDisc = 0x5eed0000 + (process.pid & 0xffff);
const DOWN = 1, INIT = 2, UP = 3, ADMIN_DOWN = 0;
function send(peer, s) {
  const b = Buffer.alloc(24);
  b[0] = 1 << 5; b[1] = s.state << 6; b[2] = 3; b[3] = 24;
  b.writeUInt32BE(myDisc, 4); b.writeUInt32BE(s.remote, 8);
  b.writeUInt32BE(200000, 12); b.writeUInt32BE(200000, 16); b.writeUInt32BE(0, 20);
  tx.send(b, 3784, peer);
}
rx.on('message', (m, info) => {
  if (m.length < 24 || (m[0] >> 5) !== 1) return;
  const peerState = m[1] >> 6;
  const s = sessions.get(info.address) ?? { state: DOWN, remote: 0 };
  sessions.set(info.address, s);
  s.remote = m.readUInt32BE(4);
  s.last = Date.now();
  if (s.state === DOWN && peerState === DOWN) s.state = INIT;
  else if (s.state === DOWN && peerState === INIT) s.state = UP;
  else if (s.state === INIT && (peerState === INIT || peerState === UP)) s.state = UP;
  else if (s.state === UP && (peerState === DOWN || peerState === ADMIN_DOWN)) s.state = DOWN;
});
setInterval(() => {
  for (const [peer, s] of sessions) {
    if (s.state !== DOWN && Date.now() - s.last > 3000) { s.state = DOWN; s.remote = 0; }
    send(peer, s);
  }
}, 200);
rx.bind(3784, '0.0.0.0');
tx.bind(49152, '0.0.0.0', () => tx.setTTL(255));
`;

async function watchedRoute(t: Test, runner: ChassisRunner, prefix: string, n: number): Promise<void> {
  const { env, hv1, agents } = await clusterWithHv1(t, runner, prefix);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  // A gateway router on hv1 between sw0 (10.N.0.0/24, vm1) and ext (172.31.N.0/24, the next
  // hop); 10.99.N.0/24 lies behind the next hop.
  const hex = n.toString(16).padStart(2, '0');
  await nbctl('lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', `options:chassis=${hv1.name}`);
  for (const [sw, lrp, mac, cidr] of [['sw0', 'gw-sw0', `00:00:00:${hex}:00:01`, `10.${n}.0.1/24`], ['ext', 'gw-ext', `00:00:00:${hex}:01:01`, `172.31.${n}.1/24`]] as const) {
    await nbctl('ls-add', sw);
    await linkSwitchToRouter(nbctl, sw, 'gw', lrp, mac, cidr);
  }
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', `0a:00:00:00:${hex}:02 10.${n}.0.2`);
  await nbctl('lsp-add', 'ext', 'nh', '--', 'lsp-set-addresses', 'nh', `0a:00:00:00:${hex}:03 172.31.${n}.2`);
  const vm1 = await hv1.addVm('vm1', { mac: `0a:00:00:00:${hex}:02`, cidr: `10.${n}.0.2/24`, gateway: `10.${n}.0.1` });
  const nh = await hv1.addVm('nh', { mac: `0a:00:00:00:${hex}:03`, cidr: `172.31.${n}.2/24`, gateway: `172.31.${n}.1` });
  const behind = `10.99.${n}.1`;
  await nh.exec('ip', 'addr', 'add', `${behind}/32`, 'dev', 'lo');
  await pingBecomes(vm1, `172.31.${n}.2`, true, 'vm1 reaches the next hop through the gateway router', agents);

  // The route, watched by a session with short timers (300 ms, multiplier 3).
  await nbctl('--bfd', 'lr-route-add', 'gw', `10.99.${n}.0/24`, `172.31.${n}.2`, 'gw-ext');
  const bfd = (await nbctl('--bare', '--columns=_uuid', 'find', 'BFD', `dst_ip=172.31.${n}.2`)).trim();
  await nbctl('set', 'BFD', bfd, 'min_tx=300', 'min_rx=300', 'detect_mult=3');
  const nbStatus = async (): Promise<string> => (await nbctl('get', 'BFD', bfd, 'status')).trim();
  const sbStatus = async (): Promise<string> => (await sbctl('--bare', '--columns=status', 'find', 'BFD', `dst_ip=172.31.${n}.2`)).trim();
  await untilLogged('the session down in the NB (a route uses it)', async () => ((await nbStatus()) === 'down' ? true : undefined), WAIT_MS, agents);
  t.equal(await vm1.ping(behind, 2), false, 'with no speaker the route is out: nothing behind the next hop is reached');

  // The speaker answers: the chassis's session comes up, the route comes in.
  let stop = nodeInNs(t, nh, SPEAKER);
  await untilLogged('the session up in the NB', async () => ((await nbStatus()) === 'up' ? true : undefined), WAIT_MS, agents);
  t.equal(await sbStatus(), 'up', `the SB status ${runner} wrote`);
  await pingBecomes(vm1, behind, true, 'vm1 reaches the network behind the next hop', agents);

  // Silenced: the session times out (about a second), the route goes.
  await stop();
  const silenced = Date.now();
  await untilLogged('the session down once the next hop is silent', async () => ((await nbStatus()) === 'down' ? true : undefined), WAIT_MS, agents);
  t.comment(`${runner}: down in the NB ${Date.now() - silenced} ms after the speaker stopped`);
  await pingBecomes(vm1, behind, false, 'the route is out again', agents);
  t.ok(await vm1.ping(`172.31.${n}.2`), 'the next hop\'s own subnet is still reached');

  // Back: up again.
  stop = nodeInNs(t, nh, SPEAKER);
  await untilLogged('the session up again', async () => ((await nbStatus()) === 'up' ? true : undefined), WAIT_MS, agents);
  await pingBecomes(vm1, behind, true, 'the route is back', agents);

  // The route deleted with its session (lr-route-del deletes the BFD row too).
  await nbctl('lr-route-del', 'gw', `10.99.${n}.0/24`);
  await untilLogged('no BFD row left in the SB', async () => ((await sbStatus()) === '' ? true : undefined), WAIT_MS, agents);
  await pingBecomes(vm1, behind, false, 'no route, nothing behind the next hop', agents);
  await stop();
}

t.test('a static route watched by BFD, the session run by our agent: in once up, out when the next hop goes silent, in again', { skip: e2eSkip }, async (t) => {
  await watchedRoute(t, 'ovnts agent', '172.30.46', 46);
});

// ovn-controller 23.03 writes its sessions' states when its main loop runs pinctrl, which in this
// quiet setup came about once a minute (its jsonrpc log showed each BFD.status write sent then and
// answered by our door within 20 ms; bumping nb_cfg meanwhile did not hasten it): each change
// takes up to a minute to reach the NB, and the test about three. So it runs with test:long.
const long = process.env.OVNTS_LONG === '1';

t.test('the same with the real ovn-controller 23.03 running the session, through our SB door', { skip: e2eSkip || (long ? false : 'about three minutes: npm run test:long') }, async (t) => {
  await watchedRoute(t, 'ovn-controller', '172.30.47', 47);
});
