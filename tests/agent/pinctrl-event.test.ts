// Goal: a trigger_event packet-in is read back as ovn-controller 23.03's pinctrl reads it: the
// event type, then (code, length, bytes) options, an empty_lb_backends event with its vip,
// protocol and load_balancer; unknown event types ignored; truncated, hostile and incomplete
// userdata counted and ignored, never a crash. Method: userdata made by our compiler from the
// action text northd writes (so the codec round-trips it), every truncation of it, hand-made bad
// options, and seeded random and mutated bytes; then Pinctrl's handling and counters.

import t from 'tap';
import { ACTION_OPCODE } from '../../agent/compile/tables.js';
import { decidePacketIn, ignoreReasons } from '../../agent/pinctrl/handlers.js';
import { Pinctrl, readControllerEvent, type ControllerEventLookup } from '../../agent/pinctrl/index.js';
import type { PacketIn2 } from '../../agent/openflow/messages.js';
import { Rng } from '../helpers/seeded-rng.js';
import { FakeTimers } from '../helpers/fake-timers.js';
import { controllerUserdata, hex } from './pinctrl-fixtures.js';

const LB = '12345678-abcd-9876-fedc-11119f8e7d6c';
const seed = Number(process.env.OVNTS_SEED ?? 1515);
/** A TCP SYN is what reaches the flow; the handler reads only the userdata. */
const SYN = hex('0a0000000002 0a0000000001 0800 4500002800010000 4006 0000 0a000001 0a00000a 04d2 0050 00000000 00000000 5002 2000 0000 0000');

const trigger = (options: string): Buffer =>
  controllerUserdata(`trigger_event(event = "empty_lb_backends"${options});`, { table: 6, isSwitch: true });
const pin = (userdata: Buffer): PacketIn2 => ({ packet: SYN, userdata, metadata: new Map(), reason: 1 });
/** An EVENT header with `args` after it. */
const withHeader = (args: Buffer): Buffer => Buffer.concat([hex('0000000f 00000000'), args]);
/** One option: code, length, bytes. */
const opt = (code: number, value: Buffer | string): Buffer => {
  const b = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const h = Buffer.alloc(4);
  h.writeUInt16BE(code, 0);
  h.writeUInt16BE(b.length, 2);
  return Buffer.concat([h, b]);
};

t.test('the compiler\'s userdata reads back as the event it names, whatever the order and VIP form', async (t) => {
  const ud = trigger(`, vip = "10.0.0.10:80", protocol = "tcp", load_balancer = "${LB}"`);
  t.equal(ud.readUInt32BE(0), ACTION_OPCODE.EVENT, 'opcode 15');
  t.same(decidePacketIn(pin(ud)), { kind: 'controller_event', opcode: ACTION_OPCODE.EVENT, event: { vip: '10.0.0.10:80', protocol: 'tcp', loadBalancer: LB } });
  const v6 = trigger(`, load_balancer = "${LB}", protocol = "sctp", vip = "[fd00::a]:8080"`);
  t.same(readControllerEvent(v6.subarray(8)), { kind: 'empty_lb_backends', event: { vip: '[fd00::a]:8080', protocol: 'sctp', loadBalancer: LB } });
  const noPort = trigger(`, vip = "10.0.0.10", protocol = "udp", load_balancer = "${LB}"`);
  t.match(readControllerEvent(noPort.subarray(8)), { event: { vip: '10.0.0.10', protocol: 'udp' } });
  const twice = trigger(`, vip = "10.0.0.10:80", protocol = "tcp", vip = "10.0.0.11:80", load_balancer = "${LB}"`);
  t.match(readControllerEvent(twice.subarray(8)), { event: { vip: '10.0.0.11:80' } }, 'an option given twice keeps its last value');
});

t.test('every truncation of a good userdata is ignored with a reason, never thrown', async (t) => {
  const ud = trigger(`, vip = "10.0.0.10:80", protocol = "tcp", load_balancer = "${LB}"`);
  const reasons = new Map<string, number>();
  for (let n = 0; n < ud.length; n++) {
    const d = decidePacketIn(pin(ud.subarray(0, n)));
    if (d.kind !== 'ignored') {
      t.fail(`a userdata cut to ${n} of ${ud.length} bytes was taken: ${JSON.stringify(d)}`);
      continue;
    }
    reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
  }
  t.same(Object.fromEntries(reasons), { no_header: 8, bad_userdata: ud.length - 8 }, 'shorter than the header: no header; otherwise bad userdata');
  const d = decidePacketIn(pin(ud.subarray(0, 12 + 4 + 12 + 4 + 3)));
  t.match(d, { kind: 'ignored', reason: 'bad_userdata', message: /missing lb parameters/ }, 'cut between options: the load balancer is missing');
});

t.test('unknown events, unknown options, lengths past the end, bytes that are not UTF-8', async (t) => {
  const good = [opt(1, '10.0.0.10:80'), opt(2, 'tcp'), opt(3, LB)];
  t.match(readControllerEvent(Buffer.concat([hex('00000001'), ...good])), { kind: 'unknown_event', eventType: 1 });
  t.match(decidePacketIn(pin(withHeader(Buffer.concat([hex('ffffffff'), ...good])))), { kind: 'ignored', reason: 'unknown_event' });
  t.match(readControllerEvent(Buffer.concat([hex('00000000'), ...good, opt(4, 'x')])), { kind: 'malformed', message: /unknown empty_lb_backends option 4/ });
  t.match(readControllerEvent(Buffer.concat([hex('00000000'), ...good, hex('0001 ffff 3130')])), { kind: 'malformed', message: /cut short/ });
  t.match(readControllerEvent(Buffer.concat([hex('00000000'), opt(1, hex('c328')), good[1] as Buffer, good[2] as Buffer])), { kind: 'malformed', message: /not UTF-8/ });
  t.match(readControllerEvent(Buffer.concat([hex('00000000'), good[0] as Buffer, good[2] as Buffer])), { kind: 'malformed', message: /missing/ }, 'no protocol');
  t.match(readControllerEvent(Buffer.concat([hex('00000000'), opt(1, ''), opt(2, ''), opt(3, '')])), { kind: 'empty_lb_backends', event: { vip: '' } },
    'empty values are read as they are (our compiler never writes them)');
  t.match(readControllerEvent(hex('000000')), { kind: 'malformed', message: /event not present/ });
});

t.test(`seeded random and mutated userdata: never a throw, always a known reason (seed ${seed})`, async (t) => {
  const rng = new Rng(seed);
  const good = trigger(`, vip = "[fd00::1]:80", protocol = "tcp", load_balancer = "${LB}"`);
  const bad: string[] = [];
  const kinds = new Map<string, number>();
  for (let n = 0; n < 4000; n++) {
    let ud: Buffer;
    const form = rng.int(0, 2);
    if (form === 0) {
      ud = withHeader(Buffer.from(Array.from({ length: rng.int(0, 60) }, () => rng.int(0, 255))));
    } else {
      ud = Buffer.from(good);
      for (let k = rng.int(1, 4); k > 0; k--) ud[rng.int(8, ud.length - 1)] = rng.pick([0, 0xff, rng.int(0, 255)]);
      if (form === 2) ud = ud.subarray(0, rng.int(0, ud.length));
    }
    try {
      const d = decidePacketIn(pin(ud));
      kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
      if (d.kind === 'ignored' && !(ignoreReasons as readonly string[]).includes(d.reason)) bad.push(`unknown reason ${d.reason}`);
      if (d.kind === 'controller_event' && (typeof d.event.vip !== 'string' || typeof d.event.loadBalancer !== 'string')) bad.push(`not strings: ${ud.toString('hex')}`);
    } catch (e) {
      bad.push(`${ud.toString('hex')}: ${e instanceof Error ? e.stack : String(e)}`);
    }
  }
  t.same(bad.slice(0, 3), []);
  t.ok((kinds.get('controller_event') ?? 0) > 0 && (kinds.get('ignored') ?? 0) > 0, `both events and ignored packet-ins came up: ${JSON.stringify([...kinds])}`);
});

t.test('Pinctrl: events go to the writer; bad userdata and a missing lookup are counted', async (t) => {
  const timers = new FakeTimers();
  const lookup: ControllerEventLookup = { chassisUuid: () => undefined, emptyLbBackendsRows: () => [] };
  const problems: string[] = [];
  const p = new Pinctrl({
    channel: { send: () => undefined }, sb: { transact: async () => [] },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
    timers, controllerEventLookup: lookup, onProblem: (m) => problems.push(m),
  });
  t.teardown(() => p.close());
  const ud = trigger(`, vip = "10.0.0.10:80", protocol = "tcp", load_balancer = "${LB}"`);
  t.same(p.handlePacketIn(pin(ud)), { kind: 'controller_event', opcode: ACTION_OPCODE.EVENT, put: 'queued' });
  t.same(p.handlePacketIn(pin(ud)), { kind: 'controller_event', opcode: ACTION_OPCODE.EVENT, put: 'waiting' });
  t.match(p.handlePacketIn(pin(ud.subarray(0, ud.length - 1))), { kind: 'ignored', reason: 'bad_userdata' });
  t.match(p.stats, { packetIns: 3, ignored: { bad_userdata: 1 }, controllerEvents: { queued: 1, waiting: 1 } });
  t.match(problems, [/trigger_event: option 3 of 36 bytes cut short/]);

  const without = new Pinctrl({
    channel: { send: () => undefined }, sb: { transact: async () => [] },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined }, timers,
  });
  t.teardown(() => without.close());
  t.match(without.handlePacketIn(pin(ud)), { kind: 'ignored', reason: 'unsupported_opcode' });
  t.equal(without.stats.controllerEvents, undefined);
});
