// Goal: the agent's health checks follow ovn-controller 23.03's state machine — probe at once,
// TCP SYN+ACK online / RST or silence offline, UDP silence online / port unreachable offline,
// success_count and failure_count, interval and timeout — write Service_Monitor.status only when
// it changes, in bounded batches, stay within their limits, and stop when rows or ports go.
// Method: a fake clock and timer queue, a fake channel that records packet-outs, a fake SB that
// records transactions; replies built from the probes the channel saw.

import t from 'tap';
import { parseIpv6 } from '../../agent/expr/lexer.js';
import { ChannelError } from '../../agent/openflow/channel.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import { Pinctrl } from '../../agent/pinctrl/index.js';
import { IP_PROTO, TCP_FLAG, buildEthernet, buildIpv4, buildTcp, isPacketError, parseFrame, parseIpv4, parseTcp, type TcpHeader } from '../../agent/pinctrl/packet.js';
import { backendMac, serviceMonitorSpecs, type SvcMonitorLookups } from '../../agent/pinctrl/svc-monitor-specs.js';
import { optionInt, type SvcMonitorSpec } from '../../agent/pinctrl/svc-monitor-table.js';
import { SvcMonitors, channelRetryMs } from '../../agent/pinctrl/svc-monitors.js';
import type { SvcReply } from '../../agent/pinctrl/svc-probe.js';
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { controllerUserdata, full } from './pinctrl-fixtures.js';
import { FakeTimers } from '../helpers/fake-timers.js';


class FakeChannel {
  readonly sent: OfMessage[] = [];
  isReady = true;
  refuse = false;
  send(msg: OfMessage): void {
    if (this.refuse) throw new ChannelError('overloaded', 'send buffer full');
    this.sent.push(msg);
  }
  /** What was sent since the last call. */
  take(): OfMessage[] {
    return this.sent.splice(0);
  }
}

/** A fake SB: records each transaction; answers at once (ok, or with `fail` as the error). */
class FakeSb {
  readonly txns: unknown[][] = [];
  fail: string | undefined;
  private inFlight = 0;
  inFlightMax = 0;
  transact = (ops: readonly unknown[]): Promise<unknown[]> => {
    this.txns.push([...ops]);
    this.inFlight++;
    this.inFlightMax = Math.max(this.inFlightMax, this.inFlight);
    const fail = this.fail;
    return new Promise((resolve) => {
      queueMicrotask(() => {
        this.inFlight--;
        resolve(fail === undefined ? ops.map(() => ({ count: 1 })) : [{ error: fail }]);
      });
    });
  };
  /** The statuses written, as [uuid, status], since the last call. */
  take(): [string, string][] {
    const out = this.txns.splice(0).flat().map((op) => {
      const o = op as { where: [[string, string, [string, string]]]; row: { status: string } };
      return [o.where[0][2][1], o.row.status] as [string, string];
    });
    return out;
  }
}

const ip4 = (s: string): number => parseIpv4(s) as number;

function spec(n: number, over: Partial<SvcMonitorSpec> = {}): SvcMonitorSpec {
  return {
    uuid: `00000000-0000-0000-0000-00000000000${n}`, dpKey: 1, portKey: n, ip: { kind: 'ipv4', v: ip4(`10.0.0.${n}`) }, port: 80, protocol: 'tcp',
    dstMac: `0a:00:00:00:00:0${n}`, srcMac: '12:34:56:78:9a:bc', srcIp: { kind: 'ipv4', v: ip4('10.0.0.254') }, options: new Map(), ...over,
  };
}

const opts = (o: Record<string, string>): Map<string, string> => new Map(Object.entries(o));

interface SentProbe {
  readonly portKey: number;
  readonly dst: string;
  readonly tcp?: TcpHeader;
  readonly udp?: { srcPort: number; dstPort: number };
}

function probeOf(m: OfMessage): SentProbe {
  if (m.kind !== 'packet_out') throw new Error(`not a packet-out: ${m.kind}`);
  const f = parseFrame(m.data);
  if (isPacketError(f) || f.ipv4 === undefined || f.l4 === undefined) throw new Error('not an IPv4 probe');
  const out = m.actions.find((a) => a.kind === 'set_field' && a.field === 'reg15');
  const portKey = Number(out?.kind === 'set_field' ? out.value : -1n);
  const dst = [24, 16, 8, 0].map((s) => (f.ipv4!.dst >>> s) & 0xff).join('.');
  if (f.ipv4.protocol === IP_PROTO.TCP) {
    const tcp = parseTcp(f.l4);
    if (isPacketError(tcp)) throw new Error(tcp.message);
    return { portKey, dst, tcp };
  }
  return { portKey, dst, udp: { srcPort: (f.udp as { srcPort: number }).srcPort, dstPort: (f.udp as { dstPort: number }).dstPort } };
}

/** The backend's answer to a TCP probe. */
function tcpAnswer(s: SvcMonitorSpec, p: SentProbe, flags: number, change: Partial<{ ack: number; dstPort: number }> = {}): SvcReply {
  const tcp = p.tcp as TcpHeader;
  return {
    kind: 'tcp', dpKey: s.dpKey, portKey: s.portKey, ip: p.dst, port: tcp.dstPort, dstPort: change.dstPort ?? tcp.srcPort,
    seq: 0x55555555, ack: change.ack ?? (tcp.seq + 1) % 2 ** 32, flags,
  };
}

function unreachable(s: SvcMonitorSpec, p: SentProbe, srcPort?: number): SvcReply {
  const u = p.udp as { srcPort: number; dstPort: number };
  return { kind: 'port_unreachable', dpKey: s.dpKey, portKey: s.portKey, ip: p.dst, port: u.dstPort, srcPort: srcPort ?? u.srcPort };
}

function setup(limits: ConstructorParameters<typeof SvcMonitors>[0]['limits'] = {}, writer: ConstructorParameters<typeof SvcMonitors>[0]['writer'] = {}) {
  const timers = new FakeTimers();
  const channel = new FakeChannel();
  const sbx = new FakeSb();
  const problems: string[] = [];
  let r = 0.25;
  const random = (): number => {
    r = (r * 7919 + 0.3183) % 1;
    return r;
  };
  const svc = new SvcMonitors({ channel, sb: sbx, timers, random, limits, writer, onProblem: (m) => problems.push(m) });
  return { timers, channel, sb: sbx, svc, problems };
}

t.test('defaults: a probe at once; no answer within 3 s is a TCP failure, applied when the next probe goes 5 s later', async (t) => {
  const { timers, channel, sb, svc } = setup();
  const s = spec(1);
  svc.sync([s]);
  const [p1] = channel.take().map(probeOf);
  t.match(p1, { portKey: 1, dst: '10.0.0.1', tcp: { dstPort: 80, flags: TCP_FLAG.SYN, ack: 0, window: 65160 } }, 'a SYN to the backend out of its port');
  t.ok((p1?.tcp?.srcPort ?? 0) >= 1024, 'from a port above 1023');
  const key = svc.table.list()[0]?.key as string;
  t.match(svc.table.monitor(key), { state: 'waiting', intervalMs: 5000, timeoutMs: 3000, successCount: 1, failureCount: 1, waitUntilMs: 4000 });

  await timers.advance(3000);
  t.equal(svc.table.monitor(key)?.state, 'waiting', 'at exactly the timeout it still waits (now > sent + timeout)');
  await timers.advance(1);
  t.match(svc.table.monitor(key), { state: 'offline', nFailures: 1, status: undefined, nextSendMs: 9001 }, 'one failure counted; the status is applied on the next run');
  t.same(sb.take(), [], 'nothing written yet');

  await timers.advance(4999);
  t.same(channel.take(), [], 'no probe before the interval is over');
  await timers.advance(1);
  t.match(svc.table.monitor(key), { state: 'waiting', status: 'offline', nFailures: 0 });
  t.equal(channel.take().length, 1, 'the next probe');
  t.same(sb.take(), [[s.uuid, 'offline']], 'status offline written');
  svc.close();
});

t.test('TCP: SYN+ACK is online at once and closed with an RST+ACK; RST is offline; anything else is not counted', async (t) => {
  const { timers, channel, sb, svc } = setup();
  const s = spec(2, { options: opts({ interval: '2', timeout: '1' }) });
  svc.sync([s]);
  const p = probeOf(channel.take()[0] as OfMessage);
  t.equal(svc.handleReply(tcpAnswer(s, p, TCP_FLAG.ACK, { ack: 12345 })), 'not_ours', 'another ack number');
  t.equal(svc.handleReply(tcpAnswer(s, p, TCP_FLAG.SYN | TCP_FLAG.ACK, { dstPort: 1 })), 'not_ours', 'another destination port');
  t.equal(svc.handleReply(tcpAnswer(s, p, TCP_FLAG.ACK)), 'not_decisive', 'a bare ACK');
  t.equal(svc.handleReply({ ...tcpAnswer(s, p, TCP_FLAG.SYN | TCP_FLAG.ACK), portKey: 9 }), 'no_monitor', 'from another port');
  t.same(channel.take(), [], 'none of them answered');

  t.equal(svc.handleReply(tcpAnswer(s, p, TCP_FLAG.SYN | TCP_FLAG.ACK)), 'success');
  const [rst] = channel.take().map(probeOf);
  t.match(rst?.tcp, {
    srcPort: p.tcp?.srcPort, dstPort: 80, flags: TCP_FLAG.RST | TCP_FLAG.ACK, seq: ((p.tcp?.seq ?? 0) + 2) % 2 ** 32, ack: 0x55555556,
  }, 'RST+ACK from the probe\'s port: seq = their ack + 1, ack = their seq + 1 (as ovn-controller)');
  await timers.advance(0);
  t.same(sb.take(), [[s.uuid, 'online']], 'online written at once');
  const m = svc.table.list()[0];
  t.match(m, { state: 'online', status: 'online', nSuccess: 0, nextSendMs: 3000 });

  await timers.advance(2000);
  const p2 = probeOf(channel.take()[0] as OfMessage);
  t.not(p2.tcp?.seq, p.tcp?.seq, 'each SYN has a fresh sequence number');
  svc.handleReply(tcpAnswer(s, p2, TCP_FLAG.SYN | TCP_FLAG.ACK));
  channel.take();
  await timers.advance(0);
  t.same(sb.take(), [], 'still online: nothing written');

  await timers.advance(2000);
  const p3 = probeOf(channel.take()[0] as OfMessage);
  t.equal(svc.handleReply(tcpAnswer(s, p3, TCP_FLAG.RST | TCP_FLAG.ACK)), 'failure');
  t.same(channel.take(), [], 'nothing sent for an RST');
  await timers.advance(0);
  t.same(sb.take(), [[s.uuid, 'offline']], 'offline written at once');
  t.equal(svc.stats.replies.success, 2);
  t.equal(svc.stats.replies.failure, 1);
  svc.close();
});

t.test('UDP: silence until the timeout is online, port unreachable offline, the source port kept', async (t) => {
  const { timers, channel, sb, svc } = setup();
  const s = spec(3, { protocol: 'udp', port: 53, options: opts({ interval: '4', timeout: '2' }) });
  svc.sync([s]);
  const p1 = probeOf(channel.take()[0] as OfMessage);
  t.match(p1, { udp: { dstPort: 53 } });
  await timers.advance(2001);
  t.match(svc.table.list()[0], { state: 'online', nSuccess: 1, status: undefined }, 'silence counted as a success');
  await timers.advance(4000);
  t.match(svc.table.list()[0], { state: 'waiting', status: 'online' }, 'applied when the next probe goes');
  const p2 = probeOf(channel.take()[0] as OfMessage);
  t.equal(p2.udp?.srcPort, p1.udp?.srcPort, 'the same source port for every probe');
  t.same(sb.take(), [[s.uuid, 'online']]);

  t.equal(svc.handleReply(unreachable(s, p2, 999)), 'not_ours', 'an error quoting another source port');
  t.equal(svc.handleReply(unreachable(s, p2)), 'failure');
  await timers.advance(0);
  t.same(sb.take(), [[s.uuid, 'offline']], 'offline at once');
  svc.close();
});

t.test('success_count and failure_count: counts needed, not reset by the other outcome (23.03)', async (t) => {
  const { timers, channel, sb, svc } = setup();
  const s = spec(4, { options: opts({ interval: '1', timeout: '1', success_count: '3', failure_count: '2' }) });
  svc.sync([s]);
  const answer = async (flags: number): Promise<void> => {
    const p = probeOf(channel.take()[0] as OfMessage);
    svc.handleReply(tcpAnswer(s, p, flags));
    channel.take();
    await timers.advance(1000);
  };
  await answer(TCP_FLAG.SYN | TCP_FLAG.ACK);
  await answer(TCP_FLAG.SYN | TCP_FLAG.ACK);
  t.equal(svc.table.list()[0]?.status, undefined, 'two successes of three');
  await answer(TCP_FLAG.RST);
  t.match(svc.table.list()[0], { status: undefined, nSuccess: 2, nFailures: 1 }, 'a failure does not reset the successes');
  await answer(TCP_FLAG.SYN | TCP_FLAG.ACK);
  t.match(svc.table.list()[0], { nSuccess: 0, nFailures: 1 });
  t.same(sb.take(), [[s.uuid, 'online']], 'the third success: online');
  await answer(TCP_FLAG.RST);
  t.same(sb.take(), [[s.uuid, 'offline']], 'the failure before the third success still counts: two failures, offline');
  await answer(TCP_FLAG.SYN | TCP_FLAG.ACK);
  await answer(TCP_FLAG.SYN | TCP_FLAG.ACK);
  t.same(sb.take(), [], 'the counters restart when a status is set: two successes of three');
  await answer(TCP_FLAG.SYN | TCP_FLAG.ACK);
  t.same(sb.take(), [[s.uuid, 'online']], 'the third: online again');
  svc.close();
});

t.test('writes only on change: none when the SB view shows the status, again when it shows another', async (t) => {
  const { timers, channel, sb, svc } = setup();
  const s = spec(5, { sbStatus: 'online' });
  svc.sync([s]);
  svc.handleReply(tcpAnswer(s, probeOf(channel.take()[0] as OfMessage), TCP_FLAG.SYN | TCP_FLAG.ACK));
  await timers.advance(0);
  t.equal(svc.table.list()[0]?.status, 'online');
  t.same(sb.take(), [], 'the SB already says online (a restarted agent writes nothing)');

  svc.sync([{ ...s, sbStatus: 'offline' }]);
  await timers.advance(0);
  t.same(sb.take(), [[s.uuid, 'online']], 'someone else wrote offline: written back');
  svc.sync([{ ...s, sbStatus: 'offline' }]);
  await timers.advance(0);
  t.same(sb.take(), [], 'asked for already; the SB view has not caught up yet');
  svc.sync([{ ...s, sbStatus: 'online' }]);
  svc.sync([{ ...s, sbStatus: 'offline' }]);
  await timers.advance(0);
  t.same(sb.take(), [[s.uuid, 'online']], 'confirmed, then changed again: written again');
  t.equal(svc.stats.writes.written, 2);
  svc.close();
});

t.test('failed transactions are retried after a delay, a bounded number of times, then asked for again at the next sync', async (t) => {
  const { timers, channel, sb, svc, problems } = setup({}, { retryDelayMs: 500, attemptsMax: 2 });
  const s = spec(6);
  svc.sync([s]);
  sb.fail = 'not connected';
  svc.handleReply(tcpAnswer(s, probeOf(channel.take()[0] as OfMessage), TCP_FLAG.SYN | TCP_FLAG.ACK));
  await timers.advance(0);
  t.equal(sb.take().length, 1, 'first attempt');
  await timers.advance(499);
  t.same(sb.take(), [], 'not before the retry delay');
  await timers.advance(1);
  t.equal(sb.take().length, 1, 'second attempt');
  await timers.advance(5000);
  channel.take();
  t.same(sb.take(), [], 'given up after attemptsMax');
  t.equal(svc.stats.writes.gaveUp, 1);
  t.match(problems.join('\n'), /Service_Monitor status transaction of 1 rows failed: not connected/);
  sb.fail = undefined;
  svc.sync([s]);
  await timers.advance(0);
  t.same(sb.take(), [[s.uuid, 'online']], 'the next sync asks again');
  svc.close();
});

t.test('statuses decided together go out in batches of batchMax, one transaction at a time', async (t) => {
  const { channel, sb, svc } = setup({}, { batchMax: 2 });
  const specs = [1, 2, 3, 4, 5].map((n) => spec(n));
  svc.sync(specs);
  const probes = channel.take().map(probeOf);
  t.equal(probes.length, 5);
  for (const p of probes) svc.handleReply(tcpAnswer(specs[p.portKey - 1] as SvcMonitorSpec, p, TCP_FLAG.RST));
  await svc.flush();
  t.same(sb.txns.map((x) => x.length), [2, 2, 1]);
  t.equal(sb.inFlightMax, 1);
  t.same(sb.take().map(([, st]) => st), ['offline', 'offline', 'offline', 'offline', 'offline']);
  svc.close();
});

t.test('bounded: monitorsMax monitors, probesInFlightMax probes waiting; deferred probes go when a slot frees', async (t) => {
  const { timers, channel, svc, problems } = setup({ monitorsMax: 3, probesInFlightMax: 2 });
  const specs = [1, 2, 3, 4, 5].map((n) => spec(n, { options: opts({ timeout: '1', interval: '10' }) }));
  svc.sync(specs);
  t.equal(svc.table.size, 3, 'three monitors');
  t.equal(svc.stats.refused, 2);
  t.match(problems.join('\n'), /2 Service_Monitor rows not probed: 3 monitors is the limit/);
  svc.sync(specs);
  t.equal(problems.filter((p) => p.includes('not probed')).length, 1, 'reported once while it stays so');
  const first = channel.take().map(probeOf);
  t.same(first.map((p) => p.portKey), [1, 2], 'two probes in flight');
  t.equal(svc.table.waitingN, 2);
  t.ok(svc.stats.deferred >= 1, 'the third deferred');
  svc.handleReply(tcpAnswer(specs[0] as SvcMonitorSpec, first[0] as SentProbe, TCP_FLAG.SYN | TCP_FLAG.ACK));
  const next = channel.take().map(probeOf);
  t.same(next.map((p) => [p.portKey, p.tcp?.flags]), [[1, TCP_FLAG.RST | TCP_FLAG.ACK], [3, TCP_FLAG.SYN]], 'a reply frees a slot for it');
  t.equal(svc.table.waitingN, 2);
  await timers.advance(1001);
  t.equal(svc.table.waitingN, 0, 'the others time out');
  t.ok(svc.table.list().every((m) => m.state !== 'init'), 'every monitor probed');
  svc.close();
});

t.test('cleanup: a row gone stops its probes and drops its pending status; the channel not ready sends nothing', async (t) => {
  const { timers, channel, sb, svc } = setup();
  const [a, b] = [spec(1), spec(2)];
  svc.sync([a, b]);
  const probes = channel.take().map(probeOf);
  sb.fail = 'busy';
  svc.handleReply(tcpAnswer(a, probes[0] as SentProbe, TCP_FLAG.RST));
  await timers.advance(0);
  t.equal(sb.take().length, 1, 'a failed write of a\'s status, to be retried');
  svc.sync([b]);
  sb.fail = undefined;
  t.equal(svc.table.size, 1);
  await timers.advance(60_000);
  t.ok(channel.take().map(probeOf).every((p) => p.portKey === 2), 'only b is probed');
  t.same(sb.take().filter(([u]) => u === a.uuid), [], 'a\'s status is not retried');

  svc.sync([]);
  t.equal(svc.table.size, 0);
  await timers.advance(60_000);
  t.same(channel.take(), [], 'nothing probed');
  t.equal(timers.pending, 0, 'no timer left');

  channel.isReady = false;
  svc.sync([a]);
  t.same(channel.take(), [], 'not ready: no probe');
  await timers.advance(channelRetryMs);
  t.same(channel.take(), []);
  channel.isReady = true;
  await timers.advance(channelRetryMs);
  t.equal(channel.take().length, 1, 'probed once ready');
  channel.refuse = true;
  await timers.advance(10_000);
  t.ok(svc.stats.notSent >= 1, 'a refused packet-out is counted');
  svc.close();
  t.equal(timers.pending, 0, 'close stops the timer');
});

t.test('an options change takes effect without resetting the monitor', async (t) => {
  const { timers, channel, svc } = setup();
  const s = spec(1, { options: opts({ interval: '10', timeout: '1' }) });
  svc.sync([s]);
  svc.handleReply(tcpAnswer(s, probeOf(channel.take()[0] as OfMessage), TCP_FLAG.SYN | TCP_FLAG.ACK));
  channel.take();
  svc.sync([{ ...s, options: opts({ interval: '20', timeout: '2', success_count: 'x' }) }]);
  t.match(svc.table.list()[0], { state: 'online', status: 'online', intervalMs: 20_000, timeoutMs: 2000, successCount: 1, nextSendMs: 11_000 },
    'new interval and timeout; the probe already scheduled keeps its time; a non-integer count is the default');
  await timers.advance(10_000);
  t.equal(channel.take().length, 1);
  t.equal(optionInt(opts({ a: ' +7' }), 'a', 1), 7, 'smap_get_int: leading space and sign');
  t.equal(optionInt(opts({ a: '7s' }), 'a', 1), 1, 'trailing text: the default');
  t.equal(optionInt(opts({ a: '4294967296' }), 'a', 1), 1, 'out of int range: the default');
  svc.close();
});

// ---- Which rows: the SB view ----------------------------------------------------------------

function fakeStore(rows: { pbs: Partial<sb.Port_Binding>[]; sms: Partial<sb.Service_Monitor>[] }): SvcMonitorLookups {
  const chassis = { _uuid: 'ch-1', name: 'hv1' } as unknown as sb.Chassis;
  const dp = { _uuid: 'dp-1', tunnel_key: 5 } as unknown as sb.Datapath_Binding;
  const sms = new Map(rows.sms.map((r) => [r._uuid as string, r as unknown as Row]));
  return {
    chassisByName: (n) => (n === 'hv1' ? chassis : undefined),
    datapath: (u) => (u === 'dp-1' ? dp : undefined),
    portByName: (n) => rows.pbs.find((p) => p.logical_port === n) as sb.Port_Binding | undefined,
    table: (name) => (name === 'Service_Monitor' ? sms : new Map()),
  };
}

const sm = (uuid: string, lp: string, ip: string, over: Partial<sb.Service_Monitor> = {}): Partial<sb.Service_Monitor> => ({
  _uuid: uuid, ip, port: 80, protocol: [], logical_port: lp, src_mac: '12:34:56:78:9A:BC', src_ip: ip.includes(':') ? 'fd00::fe' : '10.0.0.254',
  status: [], options: new Map([['interval', '1']]), external_ids: new Map(), ...over,
});

t.test('serviceMonitorSpecs: rows of ports bound here, the port\'s MAC for the IP, unusable rows named', async (t) => {
  const store = fakeStore({
    pbs: [
      { logical_port: 'vm1', chassis: ['ch-1'], datapath: 'dp-1', tunnel_key: 1, mac: ['0a:00:00:00:00:09 10.0.0.9', '0a:00:00:00:00:01 10.0.0.1 fd00::1'] },
      { logical_port: 'vm2', chassis: ['ch-2'], datapath: 'dp-1', tunnel_key: 2, mac: ['0a:00:00:00:00:02 10.0.0.2'] },
      { logical_port: 'vm3', chassis: ['ch-1'], datapath: 'dp-1', tunnel_key: 3, mac: ['0a:00:00:00:00:03'] },
      { logical_port: 'vm4', chassis: ['ch-1'], datapath: 'dp-1', tunnel_key: 4, mac: ['0a:00:00:00:00:04 10.0.0.4'] },
    ],
    sms: [
      sm('u1', 'vm1', '10.0.0.1', { status: ['online'] }),
      sm('u2', 'vm2', '10.0.0.2'),
      sm('u3', 'vm3', '10.0.0.3', { protocol: ['udp'], port: 53 }),
      sm('u4', 'vm1', 'fd00::1'),
      sm('u5', 'vm4', '10.0.0.5'),
      sm('u6', 'vm1', '10.0.0.1', { src_ip: 'fd00::fe', port: 81 }),
      sm('u7', 'vm9', '10.0.0.9'),
    ],
  });
  const r = serviceMonitorSpecs(store, 'hv1');
  t.same(r.specs.map((s) => [s.uuid, s.dpKey, s.portKey, s.dstMac, s.protocol, s.port, s.sbStatus]), [
    ['u1', 5, 1, '0a:00:00:00:00:01', 'tcp', 80, 'online'],
    ['u3', 5, 3, '0a:00:00:00:00:03', 'udp', 53, undefined],
    ['u4', 5, 1, '0a:00:00:00:00:01', 'tcp', 80, undefined],
  ], 'vm2 is elsewhere, vm9 unknown; an entry without IPs gives its MAC; IPv6 found in the entry');
  t.equal(r.specs[0]?.srcMac, '12:34:56:78:9a:bc', 'src_mac normalized');
  t.same(r.specs[2]?.ip, { kind: 'ipv6', v: parseIpv6('fd00::1') });
  t.equal(r.skipped.length, 2);
  t.match(r.skipped[0], /u5.*no MAC for 10.0.0.5/);
  t.match(r.skipped[1], /u6.*src_ip "fd00::fe"/);
  t.same(serviceMonitorSpecs(store, 'hv2'), { specs: [], skipped: [] }, 'an unknown chassis probes nothing');
  t.equal(backendMac(['router', 'unknown', '0a:00:00:00:00:07 10.0.0.7/24'], { kind: 'ipv4', v: ip4('10.0.0.7') }), '0a:00:00:00:00:07', 'a prefix length is allowed');
});

t.test('the Pinctrl shell: a handle_svc_check packet-in reaches the monitors', async (t) => {
  const timers = new FakeTimers();
  const channel = new FakeChannel();
  const sbx = new FakeSb();
  const pinctrl = new Pinctrl({
    channel, sb: sbx, timers, random: () => 0.5,
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
  });
  const s = spec(1);
  pinctrl.serviceMonitorsChanged([s]);
  const p = probeOf(channel.take()[0] as OfMessage);
  t.equal(p.tcp?.seq, 0x80000000, 'random 0.5: sequence number 2^31');
  const src = ip4('10.0.0.1');
  const dst = ip4('10.0.0.254');
  const seg = buildTcp({ srcPort: 80, dstPort: p.tcp?.srcPort ?? 0, seq: 7, ack: 0x80000001, flags: TCP_FLAG.SYN | TCP_FLAG.ACK, window: 100, urgent: 0 }, Buffer.alloc(0), { kind: 'ipv4', src, dst });
  const packet = buildEthernet({ dst: '12:34:56:78:9a:bc', src: '0a:00:00:00:00:01', ethType: 0x0800 }, buildIpv4({ tos: 0, id: 0, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.TCP, src, dst }, seg));
  const metadata = new Map([['metadata', { value: 1n, mask: full(64) }], ['reg14', { value: 1n, mask: full(32) }]]);
  const out = pinctrl.handlePacketIn({ packet, userdata: controllerUserdata('handle_svc_check(inport);', { table: 8, isSwitch: true }), metadata, reason: 1 });
  t.same(out, { kind: 'svc_checked', opcode: 18, outcome: 'success' });
  t.equal(channel.take().length, 1, 'the RST+ACK');
  await timers.advance(0);
  t.same(sbx.take(), [[s.uuid, 'online']]);
  t.equal(pinctrl.serviceMonitors.stats.replies.success, 1);
  pinctrl.close();
  t.equal(timers.pending, 0);
});
