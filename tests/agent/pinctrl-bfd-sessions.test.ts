// Goal: the agent's BFD sessions follow ovn-controller 23.03's pinctrl — the SB's admin_down and
// its release, the three-way handshake to up, the detection timeout to down (found at its time),
// the peer's admin_down, poll answered by final, remote demand mode, the transmit interval with
// its bounded jitter — write BFD.status only when a session changes it, and stay bounded.
// Method: the pure table driven by explicit times, then the shell with a fake clock and timer
// queue, a fake channel that records packet-outs and a fake SB that records transactions; the
// peer's packets are real packets read back through the codec.

import t from 'tap';
import { ChannelError } from '../../agent/openflow/channel.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import {
  BFD_FLAG, BFD_STATE, composeBfdPacket, decodeBfdControl, encodeBfdControl, parseBfdMessage, type BfdControl, type BfdMessage, type BfdState,
} from '../../agent/pinctrl/bfd-packet.js';
import { BFD_INITIAL_DETECTION_MS, BfdSessionTable, type BfdSessionInfo } from '../../agent/pinctrl/bfd-session-table.js';
import { BfdSessions } from '../../agent/pinctrl/bfd-sessions.js';
import type { BfdSessionSpec } from '../../agent/pinctrl/bfd-specs.js';
import { Pinctrl } from '../../agent/pinctrl/index.js';
import { isPacketError, parseFrame, parseIpv4 } from '../../agent/pinctrl/packet.js';
import { FakeTimers } from '../helpers/fake-timers.js';
import { controllerUserdata } from './pinctrl-fixtures.js';

const ip4 = (s: string): number => parseIpv4(s) as number;
const PEER_DISC = 0x7777;
const PEER_MAC = '00:00:00:00:ee:01';

function spec(n: number, over: Partial<BfdSessionSpec> = {}): BfdSessionSpec {
  return {
    uuid: `00000000-0000-4000-8000-b0000000000${n}`, key: `172.16.0.${100 + n}:${49152 + n}`, logicalPort: 'lrp-pub', dpKey: 2, portKey: 3,
    endpoints: { srcMac: '00:00:00:00:ff:01', src: { kind: 'ipv4', v: ip4('172.16.0.1') }, dst: { kind: 'ipv4', v: ip4(`172.16.0.${100 + n}`) }, srcPort: 49152 + n },
    disc: 1000 + n, minTxMs: 1000, minRxMs: 1000, detectMult: 3, sbStatus: 'down', ...over,
  };
}

interface PeerSays {
  readonly state: BfdState;
  readonly myDisc?: number;
  readonly yourDisc?: number;
  readonly minTxMs?: number;
  readonly minRxMs?: number;
  readonly mult?: number;
  readonly flags?: number;
}

/** The next hop's control packet to session `s`, as a packet-in carries it, read by the codec. */
function fromPeer(s: BfdSessionSpec, p: PeerSays): BfdMessage {
  const control = encodeBfdControl({
    state: p.state, final: false, mult: p.mult ?? 3, myDisc: p.myDisc ?? PEER_DISC, yourDisc: p.yourDisc ?? s.disc, minTxMs: p.minTxMs ?? 300, minRxMs: p.minRxMs ?? 300,
  });
  control[1] = (control[1] as number) | (p.flags ?? 0);
  const m = parseBfdMessage(peerFrame(s, control));
  if (m.kind !== 'message') throw new Error(m.message);
  return m;
}

function peerFrame(s: BfdSessionSpec, control: Buffer): Buffer {
  return composeBfdPacket({ srcMac: PEER_MAC, src: s.endpoints.dst, dst: s.endpoints.src, srcPort: 49999 }, control);
}

interface Sent {
  readonly control: BfdControl;
  readonly dst: number;
  readonly dpKey: bigint;
  readonly portKey: bigint;
}

function sentOf(m: OfMessage): Sent {
  if (m.kind !== 'packet_out') throw new Error(`not a packet-out: ${m.kind}`);
  const f = parseFrame(m.data);
  if (isPacketError(f) || f.ipv4 === undefined || f.l4 === undefined) throw new Error('not an IPv4 BFD packet');
  const value = (field: string): bigint => {
    const a = m.actions.find((x) => x.kind === 'set_field' && x.field === field);
    return a?.kind === 'set_field' ? a.value : -1n;
  };
  return { control: decodeBfdControl(f.l4.subarray(8)), dst: f.ipv4.dst, dpKey: value('metadata'), portKey: value('reg14') };
}

const stateOf = (x: BfdSessionInfo | undefined): string => x?.status ?? 'none';

t.test('table: admin_down from the SB holds a session; released, it sends at once', async (t) => {
  const tb = new BfdSessionTable({ random: () => 0 });
  const s = spec(1, { sbStatus: 'admin_down' });
  t.same(tb.sync([s], 0), { added: 1, removed: [], overruled: [], refused: 0 });
  t.match(tb.session(s.key), { state: BFD_STATE.ADMIN_DOWN, remoteMinRxMs: 1, detectionTimeoutMs: BFD_INITIAL_DETECTION_MS, lastRxMs: 0, nextTxMs: 0 }, 'a new session as ovn-controller makes it');
  const held = tb.run(10_000);
  t.same([held.packets.length, held.changes.length, held.nextRunMs], [0, 0, Infinity], 'admin_down sends nothing and has nothing to wait for');
  t.same(tb.sync([{ ...s, sbStatus: 'down' }], 10_000).overruled, [s.uuid], 'the SB releases it: down');
  const r = tb.run(10_000);
  t.equal(r.packets.length, 1, 'due long ago: sent at once');
  t.same(r.changes, [], 'a state the SB set is not reported');
  t.match(sentOf(r.packets[0] as OfMessage), { control: { state: BFD_STATE.DOWN, myDisc: 1001, yourDisc: 0, mult: 3, minTxUs: 1_000_000, minRxUs: 1_000_000, flags: 0 }, dst: ip4('172.16.0.101'), dpKey: 2n, portKey: 3n });
  t.equal(r.nextRunMs, 11_000, 'next after max(min_tx, remote min rx 1) = 1000 ms, no jitter drawn at 0');
});

t.test('table: a new session takes its row\'s status at once', async (t) => {
  const tb = new BfdSessionTable({ random: () => 0 });
  tb.sync([spec(1)], 0);
  t.equal(stateOf(tb.session(spec(1).key)), 'down', 'a row whose status is down runs from the first sync');
  t.equal(tb.run(0).packets.length, 1);
});

t.test('table: three-way handshake to up, from either side', async (t) => {
  const tb = new BfdSessionTable({ random: () => 0 });
  const s = spec(1);
  tb.sync([s], 0);
  tb.run(0);
  const init = tb.onMessage(fromPeer(s, { state: BFD_STATE.DOWN, yourDisc: 0 }), 100);
  t.equal(init.outcome, 'no_session', 'a peer\'s down with your_disc 0 finds no session, as in ovn-controller');
  const a = tb.onMessage(fromPeer(s, { state: BFD_STATE.DOWN }), 100);
  t.same([a.outcome, a.changes, a.writes], ['handled', [{ uuid: s.uuid, status: 'init' }], [{ uuid: s.uuid, status: 'init' }]], 'peer down: init, reported');
  t.match(tb.session(s.key), { remoteDisc: PEER_DISC, remoteMinRxMs: 300, detectionTimeoutMs: 3 * 1000, lastRxMs: 100 }, 'the peer\'s discriminator, required min rx, and mult × max(its min tx 300, our min rx 1000)');
  const next = tb.run(1000);
  t.match(sentOf(next.packets[0] as OfMessage).control, { state: BFD_STATE.INIT, yourDisc: PEER_DISC }, 'init names the peer');
  const b = tb.onMessage(fromPeer(s, { state: BFD_STATE.UP }), 1100);
  t.same(b.changes, [{ uuid: s.uuid, status: 'up' }], 'peer up: up');
  t.same(tb.onMessage(fromPeer(s, { state: BFD_STATE.UP }), 1200).changes, [], 'up again is no change');
  t.match(sentOf(tb.run(2000).packets[0] as OfMessage).control, { state: BFD_STATE.UP, yourDisc: PEER_DISC });

  const tb2 = new BfdSessionTable({ random: () => 0 });
  tb2.sync([s], 0);
  t.same(tb2.onMessage(fromPeer(s, { state: BFD_STATE.INIT }), 50).changes, [{ uuid: s.uuid, status: 'up' }], 'down and the peer already in init: up at once');
  const tb3 = new BfdSessionTable({ random: () => 0 });
  tb3.sync([s], 0);
  t.same(tb3.onMessage(fromPeer(s, { state: BFD_STATE.UP }), 50).changes, [], 'down and the peer up: stays down (the peer must see our down first)');
  tb3.onMessage(fromPeer(s, { state: BFD_STATE.DOWN }), 60);
  t.same(tb3.onMessage(fromPeer(s, { state: BFD_STATE.DOWN }), 70).changes, [], 'init and the peer still down: stays init');
});

/** A table with session `s` up since `at`. */
function upAt(s: BfdSessionSpec, at: number, peer: Partial<PeerSays> = {}): BfdSessionTable {
  const tb = new BfdSessionTable({ random: () => 0 });
  tb.sync([s], at);
  tb.onMessage(fromPeer(s, { state: BFD_STATE.INIT, ...peer }), at);
  if (tb.session(s.key)?.status !== 'up') throw new Error('not up');
  return tb;
}

t.test('table: detection timeout takes init or up down at its time, and forgets the peer', async (t) => {
  const s = spec(1, { minTxMs: 10_000, sbStatus: 'up' });
  const tb = upAt(s, 0);
  const r0 = tb.run(0);
  t.equal(r0.nextRunMs, 3000, 'the next run is the detection deadline, before the next packet at 10 s');
  t.same(tb.run(2999).changes, [], 'one ms before: still up');
  const r = tb.run(3000);
  t.same([r.changes, r.writes], [[{ uuid: s.uuid, status: 'down' }], [{ uuid: s.uuid, status: 'down' }]], 'silent for mult × interval: down, to be written over the SB\'s up');
  t.match(tb.session(s.key), { state: BFD_STATE.DOWN, remoteDisc: 0 }, 'reporting down forgets the peer\'s discriminator');
  t.same(tb.run(100_000).changes, [], 'down does not time out');
  t.equal(tb.run(100_000).nextRunMs, 110_000, 'and waits for nothing but its next packet');

  const init = new BfdSessionTable({ random: () => 0 });
  init.sync([s], 0);
  init.onMessage(fromPeer(s, { state: BFD_STATE.DOWN, mult: 2, minTxMs: 2000 }), 0);
  t.same(init.run(3999).changes, [], 'init: 2 × max(2000, 1000) = 4000 ms');
  t.same(init.run(4000).changes, [{ uuid: s.uuid, status: 'down' }], 'init times out too');

  const fresh = new BfdSessionTable({ random: () => 0 });
  fresh.sync([s], 0);
  fresh.onMessage(fromPeer(s, { state: BFD_STATE.INIT }), 0);
  fresh.onMessage(fromPeer(s, { state: BFD_STATE.UP }), 2500);
  t.same(fresh.run(3000).changes, [], 'a packet restarts the detection time');
  t.same(fresh.run(5500).changes, [{ uuid: s.uuid, status: 'down' }]);
});

t.test('table: the peer\'s admin_down takes init or up down; nothing else does in down', async (t) => {
  const s = spec(1);
  const tb = upAt(s, 0);
  t.same(tb.onMessage(fromPeer(s, { state: BFD_STATE.ADMIN_DOWN }), 10).changes, [{ uuid: s.uuid, status: 'down' }], 'up → down');
  t.same(tb.onMessage(fromPeer(s, { state: BFD_STATE.ADMIN_DOWN }), 20).changes, [], 'down stays down');
  const ti = new BfdSessionTable({ random: () => 0 });
  ti.sync([s], 0);
  ti.onMessage(fromPeer(s, { state: BFD_STATE.DOWN }), 0);
  t.same(ti.onMessage(fromPeer(s, { state: BFD_STATE.ADMIN_DOWN }), 10).changes, [{ uuid: s.uuid, status: 'down' }], 'init → down');
  const tu = upAt(s, 0);
  t.same(tu.onMessage(fromPeer(s, { state: BFD_STATE.DOWN }), 10).changes, [{ uuid: s.uuid, status: 'down' }], 'up and the peer down: down');
});

t.test('table: a poll is answered at once with final; demand mode stops the sending', async (t) => {
  const s = spec(1);
  const tb = upAt(s, 0);
  const r = tb.onMessage(fromPeer(s, { state: BFD_STATE.UP, flags: BFD_FLAG.POLL }), 10);
  t.equal(r.packets.length, 1, 'one answer');
  t.match(sentOf(r.packets[0] as OfMessage).control, { state: BFD_STATE.UP, flags: BFD_FLAG.FINAL, yourDisc: PEER_DISC });
  t.equal(tb.onMessage(fromPeer(s, { state: BFD_STATE.UP }), 20).packets.length, 0, 'no poll, no answer');
  const held = new BfdSessionTable({ random: () => 0 });
  held.sync([spec(1, { sbStatus: 'admin_down' })], 0);
  const h = held.onMessage(fromPeer(s, { state: BFD_STATE.UP, flags: BFD_FLAG.POLL }), 10);
  t.match([h.changes, held.session(s.key)?.lastRxMs, sentOf(h.packets[0] as OfMessage).control.state], [[], 0, BFD_STATE.ADMIN_DOWN],
    'admin_down: no change, not even the time of the packet; the poll is still answered, as ovn-controller does');

  t.equal(tb.run(1000).packets.length, 1, 'up sends');
  tb.onMessage(fromPeer(s, { state: BFD_STATE.UP, flags: BFD_FLAG.DEMAND }), 1000);
  t.equal(tb.session(s.key)?.remoteDemandMode, true);
  t.equal(tb.run(5000).packets.length, 0, 'the peer in demand mode: no more periodic packets');
  const down = new BfdSessionTable({ random: () => 0 });
  down.sync([s], 0);
  down.onMessage(fromPeer(s, { state: BFD_STATE.DOWN, flags: BFD_FLAG.DEMAND }), 0);
  t.equal(down.session(s.key)?.remoteDemandMode, false, 'the demand bit counts only in up');
});

t.test('table: the transmit interval and its jitter', async (t) => {
  const s = spec(1);
  let r = 0;
  const draws = [0, 0.999999, 0.5];
  const tb = new BfdSessionTable({ random: () => draws[r++ % draws.length] as number });
  tb.sync([s], 0);
  const gaps: number[] = [];
  let now = 0;
  for (let i = 0; i < 3; i++) {
    tb.run(now);
    const next = tb.session(s.key)?.nextTxMs as number;
    gaps.push(next - now);
    now = next;
  }
  t.same(gaps, [1000, 751, 875], 'min_tx less floor(random × a quarter): 0, 249, 125');
  // The peer asks for a slower rate: max(min_tx, its required min rx).
  tb.onMessage(fromPeer(s, { state: BFD_STATE.DOWN, minRxMs: 2000 }), now);
  tb.run(now);
  const slow = (tb.session(s.key)?.nextTxMs as number) - now;
  t.ok(slow > 1500 && slow <= 2000, `the peer's 2000 ms: ${slow}`);
  // Seeded draws: every interval in (3/4, 1] of the base.
  let seed = 1;
  const lcg = (): number => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const tj = new BfdSessionTable({ random: lcg });
  tj.sync([spec(2, { minTxMs: 400 })], 0);
  let at = 0;
  let low = Infinity;
  let high = 0;
  for (let i = 0; i < 500; i++) {
    tj.run(at);
    const next = tj.session(spec(2).key)?.nextTxMs as number;
    low = Math.min(low, next - at);
    high = Math.max(high, next - at);
    at = next;
  }
  t.ok(low > 300 && high <= 400 && low < high, `500 intervals of 400 ms within (300, 400]: ${low}..${high}`);
  const tiny = new BfdSessionTable({ random: () => 0.999 });
  tiny.sync([spec(3, { minTxMs: 3 })], 0);
  tiny.run(0);
  t.equal(tiny.session(spec(3).key)?.nextTxMs, 3, 'under 4 ms: no jitter');
});

t.test('table: a peer asking for no packets, and the sessions\' identity', async (t) => {
  const s = spec(1);
  const tb = new BfdSessionTable({ random: () => 0 });
  tb.sync([s], 0);
  tb.onMessage(fromPeer(s, { state: BFD_STATE.DOWN, minRxMs: 0 }), 0);
  t.same([tb.run(0).packets.length, tb.run(60_000).packets.length], [0, 0], 'required min rx 0: nothing sent');
  t.equal(tb.onMessage(fromPeer(spec(2), { state: BFD_STATE.DOWN, yourDisc: s.disc }), 0).outcome, 'no_session', 'our discriminator from another next hop');
  t.equal(tb.onMessage(fromPeer(s, { state: BFD_STATE.DOWN, yourDisc: s.disc + 1 }), 0).outcome, 'no_session', 'another discriminator from our next hop');
  // A changed row keeps the session (same next hop and source port) and its state.
  tb.onMessage(fromPeer(s, { state: BFD_STATE.DOWN }), 0);
  tb.sync([{ ...s, sbStatus: 'init', minTxMs: 500, detectMult: 7, portKey: 9 }], 10);
  t.match(tb.session(s.key), { state: BFD_STATE.INIT, localMinTxMs: 500, localMult: 7, portKey: 9 }, 'the row\'s settings and the port\'s key taken again');
  t.same(tb.sync([], 20).removed, [s.uuid], 'a row gone: its session goes');
  t.equal(tb.size, 0);
});

class FakeChannel {
  readonly sent: OfMessage[] = [];
  isReady = true;
  refuse = false;
  send(msg: OfMessage): void {
    if (this.refuse) throw new ChannelError('overloaded', 'send buffer full');
    this.sent.push(msg);
  }
  take(): OfMessage[] {
    return this.sent.splice(0);
  }
}

/** Records each transaction's ops; answers at once (ok, or with `fail` as the error). */
class FakeSb {
  readonly txns: unknown[][] = [];
  fail: string | undefined;
  transact = (ops: readonly unknown[]): Promise<unknown[]> => {
    this.txns.push([...ops]);
    const fail = this.fail;
    return Promise.resolve(fail === undefined ? ops.map(() => ({ count: 1 })) : [{ error: fail }]);
  };
  /** The statuses written, as "uuid=status", since the last call. */
  take(): string[] {
    return this.txns.splice(0).flat().map((op) => {
      const o = op as { table: string; where: [[string, string, [string, string]]]; row: { status: string } };
      return `${o.table} ${o.where[0][2][1]}=${o.row.status}`;
    });
  }
}

function shell(options: { limits?: { sessionsMax: number }; attemptsMax?: number } = {}) {
  const timers = new FakeTimers();
  const channel = new FakeChannel();
  const sbx = new FakeSb();
  const problems: string[] = [];
  const bfd = new BfdSessions({
    channel, sb: sbx, timers, random: () => 0, onProblem: (m) => problems.push(m),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.attemptsMax === undefined ? {} : { writer: { attemptsMax: options.attemptsMax, retryDelayMs: 500 } }),
  });
  return { timers, channel, sbx, problems, bfd };
}

t.test('shell: the handshake written to BFD.status once per change, the failure at its time', async (t) => {
  const { timers, channel, sbx, bfd } = shell();
  const s = spec(1);
  bfd.sync([s]);
  t.same(channel.take().map((m) => sentOf(m).control.state), [BFD_STATE.DOWN], 'down is sent at once');
  await timers.advance(1000);
  t.equal(channel.take().length, 1, 'and every 1000 ms');
  t.same(sbx.take(), [], 'nothing written: the SB said down');
  t.equal(bfd.handleMessage(fromPeer(s, { state: BFD_STATE.DOWN })), 'handled');
  await timers.advance(0);
  t.same(sbx.take(), [`BFD ${s.uuid}=init`], 'init written at once, by _uuid');
  bfd.handleMessage(fromPeer(s, { state: BFD_STATE.UP }));
  await timers.advance(0);
  t.same(sbx.take(), [`BFD ${s.uuid}=up`]);
  bfd.sync([{ ...s, sbStatus: 'up' }]);
  await timers.advance(0);
  t.same(sbx.take(), [], 'the SB view showing up: nothing more');
  // The peer goes silent: down after 3 × 1000 ms, written then — not at the next packet or later.
  const downAt = timers.nowMs + 3000;
  for (let i = 0; i < 6; i++) await timers.advance(500);
  t.same(sbx.take(), [`BFD ${s.uuid}=down`], 'down written');
  t.ok(timers.nowMs >= downAt, 'after the detection time');
  t.equal(bfd.table.session(s.key)?.status, 'down');
  t.same([bfd.stats.stateChanges, bfd.stats.writes.written], [3, 3]);
});

t.test('shell: a quick succession of states is coalesced per row; a write is only of a change', async (t) => {
  const { timers, sbx, bfd } = shell();
  const s = spec(1);
  bfd.sync([s]);
  bfd.handleMessage(fromPeer(s, { state: BFD_STATE.DOWN }));
  bfd.handleMessage(fromPeer(s, { state: BFD_STATE.UP }));
  await timers.advance(0);
  t.same(sbx.take(), [`BFD ${s.uuid}=up`], 'init then up before the write: up alone');
  t.same([bfd.stats.writes.queued, bfd.stats.writes.replaced], [1, 1]);
  const u = spec(2, { sbStatus: 'init' });
  bfd.sync([{ ...s, sbStatus: 'up' }, u]);
  bfd.handleMessage(fromPeer(u, { state: BFD_STATE.DOWN }));
  await timers.advance(0);
  t.same(sbx.take(), [], 'a change to what the SB already says is not written');
});

t.test('shell: admin_down from the SB stops the sending and drops what waited to be written', async (t) => {
  const { timers, channel, sbx, bfd } = shell();
  const s = spec(1);
  bfd.sync([s]);
  bfd.handleMessage(fromPeer(s, { state: BFD_STATE.INIT }));
  channel.take();
  bfd.sync([{ ...s, sbStatus: 'admin_down' }]);
  await timers.advance(10_000);
  t.same(sbx.take(), [], 'the up decided before admin_down is not written over it');
  t.same(channel.take(), [], 'no packet for 10 s');
  t.equal(bfd.table.session(s.key)?.remoteDisc, 0);
  bfd.sync([{ ...s, sbStatus: 'down' }]);
  t.same(channel.take().map((m) => sentOf(m).control), [{ ...decodeBfdControl(encodeBfdControl({ state: BFD_STATE.DOWN, final: false, mult: 3, myDisc: 1001, yourDisc: 0, minTxMs: 1000, minRxMs: 1000 })) }], 'released: down, the peer forgotten, at once');
  t.same(sbx.take(), [], 'the SB\'s own down is not written back');
});

t.test('shell: a failed write is asked for again at the next sync', async (t) => {
  const { timers, sbx, bfd } = shell({ attemptsMax: 1 });
  const s = spec(1);
  bfd.sync([s]);
  sbx.fail = 'not connected';
  bfd.handleMessage(fromPeer(s, { state: BFD_STATE.INIT }));
  await timers.advance(0);
  t.same(sbx.take(), [`BFD ${s.uuid}=up`], 'tried once');
  t.equal(bfd.stats.writes.gaveUp, 1);
  sbx.fail = undefined;
  bfd.sync([s]);
  await timers.advance(0);
  t.same(sbx.take(), [`BFD ${s.uuid}=up`], 'the session is still up and the SB says down: written again');
  bfd.sync([{ ...s, sbStatus: 'up' }]);
  await timers.advance(0);
  t.same(sbx.take(), []);
});

t.test('shell: bounded, and a channel that cannot send', async (t) => {
  const { timers, channel, problems, bfd } = shell({ limits: { sessionsMax: 2 } });
  bfd.sync([spec(1), spec(2), spec(3)]);
  t.equal(bfd.table.size, 2, 'sessionsMax sessions');
  t.equal(bfd.stats.refused, 1);
  bfd.sync([spec(1), spec(2), spec(3)]);
  t.equal(problems.filter((p) => /not run/.test(p)).length, 1, 'the refusal reported once');
  bfd.sync([spec(2), spec(3)]);
  t.same(bfd.table.list().map((x) => x.key).sort(), [spec(2).key, spec(3).key], 'a session gone makes room');
  channel.take();
  // Up, then the channel goes away: no packets out, but the silent peer is still found down.
  const s = spec(2);
  bfd.handleMessage(fromPeer(s, { state: BFD_STATE.INIT }));
  channel.isReady = false;
  await timers.advance(5000);
  t.same(channel.take(), [], 'nothing sent while the channel is not ready');
  t.ok(bfd.stats.notSent > 0, 'counted');
  t.equal(bfd.table.session(s.key)?.status, 'down', 'the detection time still ran');
  channel.isReady = true;
  channel.refuse = true;
  await timers.advance(1000);
  t.ok(problems.some((p) => /BFD packet-out not sent/.test(p)), 'a refused packet-out is reported, not thrown');
  bfd.close();
  t.equal(timers.pending, 0, 'closed: no timer left');
});

t.test('pinctrl: handle_bfd_msg packet-ins reach the sessions; malformed ones are ignored and counted', async (t) => {
  const timers = new FakeTimers();
  const channel = new FakeChannel();
  const sbx = new FakeSb();
  const p = new Pinctrl({
    channel, sb: sbx, timers, random: () => 0,
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
  });
  const s = spec(1);
  p.bfdChanged([s]);
  t.equal(channel.take().length, 1, 'the session sends through pinctrl\'s channel');
  const userdata = controllerUserdata('handle_bfd_msg();', { table: 3, isSwitch: false });
  const good = encodeBfdControl({ state: BFD_STATE.DOWN, final: false, mult: 3, myDisc: PEER_DISC, yourDisc: s.disc, minTxMs: 300, minRxMs: 300 });
  t.same(p.handlePacketIn({ packet: peerFrame(s, good), userdata }), { kind: 'bfd', opcode: 23, outcome: 'handled' });
  t.equal(p.bfd.table.session(s.key)?.status, 'init');
  const bad = Buffer.from(good);
  bad[2] = 0;
  t.match(p.handlePacketIn({ packet: peerFrame(s, bad), userdata }), { kind: 'ignored', reason: 'bad_packet', message: /bfd_msg: mult/ });
  t.equal(p.stats.ignored.bad_packet, 1);
  t.equal(p.bfd.stats.messages.handled, 1, 'the malformed packet never reached the sessions');
  await timers.advance(0);
  t.same(sbx.take(), [`BFD ${s.uuid}=init`]);
  p.close();
  t.equal(timers.pending, 0);
});
