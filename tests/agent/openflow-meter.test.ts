// Goal: meters on the wire are what Open vSwitch sends and reads: our meter_mod (add, modify,
// delete), meter-config request and reply, and OpenFlow 1.5's meter action are byte for byte
// the ones ovs-ofctl itself encodes; a real ovs-vswitchd takes them, reports them back equal, and
// behaves as the agent's design assumes (a meter_mod outside any bundle; a deleted meter takes
// its flows along; a controller() is bound to its meter when its flow is installed, so a flow
// sent again picks up a meter added after it; reconciling meters leaves the right ones alone).
// Method: golden bytes; ovs-ofctl -O OpenFlow15 pointed at a fake switch in this process (a unix
// socket that answers hello and barriers) records what ovs-ofctl sends, and reads the replies we
// write; ovs-ofctl ofp-parse decodes our bytes; a private ovs-vswitchd with ovs-ofctl
// dump-meters and ofproto/trace as the oracle.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { decodeActions, encodeActions } from '../../agent/openflow/actions.js';
import { ChannelError, OfChannel } from '../../agent/openflow/channel.js';
import { decodeMessage, encodeMessage, type MeterMod, type OfMessage } from '../../agent/openflow/messages.js';
import { diffMeters } from '../../agent/openflow/reconcile.js';
import { OFPMF, type FlowSpec, type MaskedValue, type MeterSpec } from '../../agent/openflow/types.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';

const run = promisify(execFile);

const kbpsBurst: MeterSpec = { meterId: 3, flags: OFPMF.KBPS | OFPMF.BURST | OFPMF.STATS, bands: [{ type: 'drop', rate: 100, burstSize: 1000 }] };
const pktps: MeterSpec = { meterId: 3, flags: OFPMF.PKTPS | OFPMF.STATS, bands: [{ type: 'drop', rate: 10, burstSize: 0 }] };

t.test('golden bytes', async (t) => {
  // OFPT_METER_MOD (29): command, flags, meter_id, then 16-byte bands (type 1 drop, len 16, rate, burst_size, 4 zero bytes).
  t.equal(encodeMessage({ kind: 'meter_mod', mod: { command: 'add', meter: kbpsBurst } }, 2).toString('hex'),
    '061d002000000002' + '0000' + '000d' + '00000003' + '0001' + '0010' + '00000064' + '000003e8' + '00000000');
  t.equal(encodeMessage({ kind: 'meter_mod', mod: { command: 'delete', meter: { ...kbpsBurst } } }, 2).toString('hex'),
    '061d001000000002' + '0002' + '0000' + '00000003', 'a delete carries no flags and no bands, whatever the spec says');
  // OFPMP_METER_CONFIG (10) for OFPM13_ALL.
  t.equal(encodeMessage({ kind: 'meter_config_request', meterId: 0xffffffff }, 2).toString('hex'), '0612001800000002' + '000a0000' + '00000000' + 'ffffffff' + '00000000');
  // OpenFlow 1.5's OFPAT_METER (29): type, len 8, meter_id.
  t.equal(encodeActions([{ kind: 'meter', meterId: 5 }]).toString('hex'), '001d000800000005');
  t.strictSame(decodeActions(Buffer.from('001d000800000005', 'hex')), [{ kind: 'meter', meterId: 5 }]);
  // A reply of two meters, the second with a dscp_remark band (another controller's).
  const reply: OfMessage = { kind: 'meter_config_reply', more: false, meters: [kbpsBurst, { meterId: 9, flags: OFPMF.PKTPS, bands: [{ type: 'dscp_remark', rate: 5, burstSize: 0, precLevel: 2 }] }] };
  t.strictSame(decodeMessage(encodeMessage(reply, 7)).msg, reply);
  t.throws(() => decodeMessage(Buffer.from('061d002000000002' + '0000' + '000d' + '00000003' + '0009' + '0010' + '00000064' + '000003e8' + '00000000', 'hex')), /meter band type 9/);
});

/** ovs-ofctl's decoding of our bytes (ofp-parse reads raw OpenFlow messages from a file). */
async function ofpParse(msgs: readonly OfMessage[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'ovnts-meter-'));
  try {
    const file = join(dir, 'msgs.bin');
    writeFileSync(file, Buffer.concat(msgs.map((m, i) => encodeMessage(m, i + 1))));
    return (await run('ovs-ofctl', ['ofp-parse', file])).stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A switch that only talks: it answers hello (OpenFlow 1.5) and barriers, answers a meter-config
 * request with `meters`, and records every other message ovs-ofctl sends it.
 */
async function fakeSwitch(meters: readonly MeterSpec[]): Promise<{ target: string; got: Buffer[]; close: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'ovnts-fakesw-'));
  const path = join(dir, 'sw.sock');
  const got: Buffer[] = [];
  const server = net.createServer((s) => {
    let buf = Buffer.alloc(0);
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 8 && buf.length >= buf.readUInt16BE(2)) {
        const m = buf.subarray(0, buf.readUInt16BE(2));
        buf = buf.subarray(m.length);
        const xid = m.readUInt32BE(4);
        const msg = decodeMessage(Buffer.from(m)).msg;
        if (msg.kind === 'hello') s.write(encodeMessage({ kind: 'hello', versions: [6] }, xid));
        else if (msg.kind === 'barrier_request') s.write(encodeMessage({ kind: 'barrier_reply' }, xid));
        else if (msg.kind === 'meter_config_request') {
          got.push(Buffer.from(m));
          s.write(encodeMessage({ kind: 'meter_config_reply', more: false, meters }, xid));
        } else got.push(Buffer.from(m));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return { target: `unix:${path}`, got, close: () => { server.close(); rmSync(dir, { recursive: true, force: true }); } };
}

/** A message with its xid zeroed, for comparing what two encoders made. */
const noXid = (b: Buffer): string => `${b.subarray(0, 4).toString('hex')}00000000${b.subarray(8).toString('hex')}`;

t.test('ovs-ofctl encodes meter_mods, the meter action and the meter-config request exactly as we do', { skip: ovsSwitchInstalled() ? false : 'Open vSwitch is not installed' }, async (t) => {
  const sw = await fakeSwitch([kbpsBurst, { meterId: 7, flags: OFPMF.PKTPS | OFPMF.STATS, bands: [{ type: 'drop', rate: 10, burstSize: 0 }, { type: 'drop', rate: 20, burstSize: 0 }] }]);
  t.teardown(sw.close);
  const ofctl = async (...a: string[]): Promise<string> => (await run('ovs-ofctl', ['--no-names', '-O', 'OpenFlow15', ...a])).stdout;
  await ofctl('add-meter', sw.target, 'meter=3,kbps,burst,stats,bands=type=drop,rate=100,burst_size=1000');
  await ofctl('mod-meter', sw.target, 'meter=3,pktps,stats,bands=type=drop,rate=10');
  await ofctl('del-meters', sw.target, 'meter=3');
  await ofctl('add-flow', sw.target, 'table=8,actions=meter:3,resubmit(,9)');
  const dumped = await ofctl('dump-meters', sw.target);
  const ours: OfMessage[] = [
    { kind: 'meter_mod', mod: { command: 'add', meter: kbpsBurst } },
    { kind: 'meter_mod', mod: { command: 'modify', meter: pktps } },
    { kind: 'meter_mod', mod: { command: 'delete', meter: { meterId: 3, flags: 0, bands: [] } } },
    { kind: 'flow_mod', mod: { command: 'add', table: 8, priority: 0x8000, match: new Map<string, MaskedValue>(), actions: [{ kind: 'meter', meterId: 3 }, { kind: 'resubmit', table: 9 }], cookie: 0n } },
    { kind: 'meter_config_request', meterId: 0xffffffff },
  ];
  t.equal(sw.got.length, ours.length, 'one message per command (hello and barriers aside)');
  ours.forEach((m, i) => t.equal(noXid(sw.got[i] as Buffer), noXid(encodeMessage(m, 0)), `${m.kind} ${'mod' in m && 'command' in m.mod ? m.mod.command : ''}: the same bytes`));
  // And what it makes of our reply.
  t.match(dumped, /meter=3 kbps burst stats bands=\s*type=drop rate=100 burst_size=1000/);
  t.match(dumped, /meter=7 pktps stats bands=\s*type=drop rate=10\s+type=drop rate=20/);
});

t.test('ovs-ofctl reads our meter_mods as we mean them', { skip: ovsSwitchInstalled() ? false : 'Open vSwitch is not installed' }, async (t) => {
  const text = await ofpParse([
    { kind: 'meter_mod', mod: { command: 'add', meter: kbpsBurst } },
    { kind: 'meter_mod', mod: { command: 'modify', meter: { ...pktps, bands: [...pktps.bands, { type: 'drop', rate: 20, burstSize: 0 }] } } },
    { kind: 'meter_mod', mod: { command: 'delete', meter: { meterId: 0xffffffff, flags: 0, bands: [] } } },
  ]);
  t.match(text, /OFPT_METER_MOD \(OF1\.5\) \(xid=0x1\): ADD meter=3 kbps burst stats bands=\s*type=drop rate=100 burst_size=1000/);
  t.match(text, /OFPT_METER_MOD \(OF1\.5\) \(xid=0x2\): MOD meter=3 pktps stats bands=\s*type=drop rate=10\s+type=drop rate=20/);
  t.match(text, /OFPT_METER_MOD \(OF1\.5\) \(xid=0x3\): DEL meter=all/);
});

async function withSwitch(): Promise<void> {
  const sw = await startOvsSwitch({ ports: 2 });
  t.teardown(() => sw.stop());
  const ch = await OfChannel.connect({ target: sw.mgmtTarget, packetIn2: true });
  t.teardown(() => ch.close());
  const ex = (value: bigint, bits: number): MaskedValue => ({ value, mask: (1n << BigInt(bits)) - 1n });
  const udp = (port: number): Map<string, MaskedValue> => new Map([['eth_type', ex(0x800n, 16)], ['ip_proto', ex(17n, 8)], ['udp_dst', ex(BigInt(port), 16)]]);
  const metered: FlowSpec = { table: 0, priority: 100, match: udp(53), actions: [{ kind: 'meter', meterId: 1 }, { kind: 'output', port: 2 }], cookie: 1n };
  const logged: FlowSpec = { table: 0, priority: 100, match: udp(54), actions: [{ kind: 'controller', userdata: Buffer.from('0000000700000000', 'hex'), meterId: 2 }], cookie: 2n };
  const m1: MeterSpec = { meterId: 1, flags: OFPMF.KBPS | OFPMF.STATS, bands: [{ type: 'drop', rate: 1000, burstSize: 0 }] };
  const m2: MeterSpec = { meterId: 2, flags: OFPMF.PKTPS | OFPMF.BURST | OFPMF.STATS, bands: [{ type: 'drop', rate: 10, burstSize: 20 }] };
  const trace = async (port: number): Promise<string> => {
    const text = await sw.appctl('ofproto/trace', sw.bridge, `in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,udp_src=5000,udp_dst=${port}`);
    return text.split('\n').find((l) => l.startsWith('Datapath actions:')) ?? '';
  };

  t.test('meters through the channel: added, read back equal, modified, refused with a name', async (t) => {
    await ch.installMeterMods([{ command: 'add', meter: m1 }, { command: 'add', meter: m2 }]);
    // The userspace datapath makes a burst size of 0 the rate (dpif_netdev_meter_set) and
    // reports that; reconciliation counts the two as the same meter.
    t.strictSame((await ch.dumpMeters()).sort((a, b) => a.meterId - b.meterId), [{ ...m1, bands: [{ type: 'drop', rate: 1000, burstSize: 1000 }] }, m2], 'dump-meters as we sent them');
    t.same(diffMeters([m1, m2], await ch.dumpMeters()).unchanged, 2, 'and as wanted');
    t.match(await sw.ofctl('dump-meters'), /meter=2 pktps burst stats bands=\s*type=drop rate=10 burst_size=20/);
    const m1b: MeterSpec = { ...m1, bands: [{ type: 'drop', rate: 2000, burstSize: 0 }] };
    await ch.installMeterMods([{ command: 'modify', meter: m1b }]);
    t.match(await sw.ofctl('dump-meters'), /meter=1 kbps stats bands=\s*type=drop rate=2000/);
    const err = await ch.installMeterMods([{ command: 'add', meter: m1 }, { command: 'modify', meter: { ...m1, meterId: 9 } }]).catch((e: unknown) => e);
    t.ok(err instanceof ChannelError && err.kind === 'batch_failed');
    t.match(String(err), /2 of 2 meter mods refused: message 0: OFPET_METER_MOD_FAILED\/METER_EXISTS; message 1: OFPET_METER_MOD_FAILED\/UNKNOWN_METER/);
    await ch.installMeterMods([{ command: 'modify', meter: m1 }]);
  });

  t.test('a flow metering through a missing meter is refused; a deleted meter takes its flows along', async (t) => {
    const missing: FlowSpec = { ...metered, match: udp(55), actions: [{ kind: 'meter', meterId: 77 }, { kind: 'output', port: 2 }] };
    const err = await ch.installBatch([{ command: 'add', ...missing }]).catch((e: unknown) => e);
    t.match(String(err), /METER_MOD_FAILED\/INVALID_METER/, 'the bundle is refused');
    await ch.installMeterMods([{ command: 'add', meter: { ...m1, meterId: 77 } }]);
    await ch.installBatch([{ command: 'add', ...missing }]);
    t.match(await sw.ofctl('dump-flows', 'udp,tp_dst=55'), /actions=meter:77,output:2/, 'with the meter there it lands; meter:N reads back');
    await ch.installMeterMods([{ command: 'delete', meter: { meterId: 77, flags: 0, bands: [] } }]);
    t.notMatch(await sw.ofctl('dump-flows'), /tp_dst=55/, 'deleting meter 77 deleted its flow: why the agent never deletes a meter to re-add it');
  });

  t.test('a controller() is bound to its meter when the flow is installed: sent again, it picks up a meter added later', async (t) => {
    await ch.installBatch([{ command: 'add', ...metered }, { command: 'add', ...logged }]);
    t.match(await trace(53), /meter\(\d+\)/, 'meter:1 meters in the datapath');
    await ch.installMeterMods([{ command: 'delete', meter: { meterId: 2, flags: 0, bands: [] } }]);
    await ch.installBatch([{ command: 'add', ...logged, cookie: 3n }]);
    t.notMatch(await trace(54), /meter\(/, 'installed while meter 2 does not exist: the packet-in is not metered');
    await ch.installMeterMods([{ command: 'add', meter: m2 }]);
    t.notMatch(await trace(54), /meter\(/, 'adding the meter alone does not bind it');
    // What the agent does then: the same flow again, as a modify.
    const d = await ch.reconcile([metered, { ...logged, cookie: 3n }], { meters: [m1, m2] });
    t.equal(d.meterDiff?.before.length, 0, 'the meters are in place');
    t.equal(d.unchanged, 2, 'and so are the flows: nothing to refresh without a meter added');
    await ch.installMeterMods([{ command: 'delete', meter: { meterId: 2, flags: 0, bands: [] } }]);
    const r = await ch.reconcile([metered, { ...logged, cookie: 3n }], { meters: [m1, m2] });
    t.same(r.meterDiff?.before.map((m: MeterMod) => `${m.command} ${m.meter.meterId}`), ['add 2']);
    t.equal(r.modified, 1, 'the flow whose controller() names meter 2 is sent again');
    t.match(await trace(54), /sample\(sample=100\.0%,actions\(meter\(\d+\),userspace/, 'and now its packet-ins are metered');
  });

  t.test('reconciling meters: unchanged ones are left alone, changed ones modified, extra ones deleted after the flows', async (t) => {
    const before = await sw.ofctl('meter-stats');
    const flows = [metered, { ...logged, cookie: 3n }];
    const same = await ch.reconcile(flows, { meters: [m1, m2] });
    t.same([same.meterDiff?.before.length, same.meterDiff?.after.length, same.meterDiff?.unchanged], [0, 0, 2]);
    t.equal(same.mods.length, 0);
    t.match(before, /meter:1 flow_count:1/, 'meter 1 has its flow');
    const m1c: MeterSpec = { ...m1, flags: OFPMF.KBPS | OFPMF.BURST | OFPMF.STATS, bands: [{ type: 'drop', rate: 500, burstSize: 50 }] };
    const changed = await ch.reconcile(flows, { meters: [m1c, m2] });
    t.same(changed.meterDiff?.before.map((m) => `${m.command} ${m.meter.meterId}`), ['modify 1']);
    t.match(await sw.ofctl('meter-stats'), /meter:1 flow_count:1/, 'a modified meter keeps its flows');
    const gone = await ch.reconcile([{ ...logged, cookie: 3n }], { meters: [m2] });
    t.same(gone.meterDiff?.after.map((m) => `${m.command} ${m.meter.meterId}`), ['delete 1']);
    t.equal(gone.deleted, 1, 'the flow through meter 1 went first');
    t.notMatch(await sw.ofctl('dump-meters'), /meter=1 /);
    t.same(diffMeters([m2], await ch.dumpMeters()).unchanged, 1, 'and what is left is what was wanted');
  });
}

if (ovsSwitchInstalled()) await withSwitch();
