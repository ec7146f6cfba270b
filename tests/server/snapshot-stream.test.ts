// Goal: a streamed snapshot (NbStateMachine.snapshotStream, for `ovnts snapshot save`) is
// snapshot()'s bytes exactly, in pieces of any size, and stays the state of the moment it was
// captured while later transactions change, replace and delete rows.
// Method: seeded random NB transactions (tests/helpers/txn-gen.ts) and a chassis registration
// through the state machine; the whole-at-once snapshot() is the reference. The northd history
// inside it (format 2: Service_Monitor statuses and registered Chassis) survives the stream.
import t from 'tap';
import { Packr } from 'msgpackr';
import { measureNow, msgpackArrayHeader, msgpackBinHeader } from '../../ovsdb/codec.js';
import { dumpDatabaseJson, parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import { NbStateMachine, type ApplyResult } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';
import type { DbDump } from '../helpers/ovsdb-json.js';
import { parseSchemaLite } from '../helpers/ovsdb-json.js';
import { TxnGenerator } from '../helpers/txn-gen.js';

const schemaLite = parseSchemaLite(NB_SCHEMA_JSON);

class Driver {
  readonly projection = new NorthdProjection();
  readonly sm = new NbStateMachine({ schema: parseDatabaseSchema(NB_SCHEMA_JSON), projection: this.projection });
  private index = 0;
  private readonly gen: TxnGenerator;
  committed = 0;

  constructor(seed: number) {
    this.gen = new TxnGenerator({ schema: schemaLite, seed, faultProbability: 0.1 });
  }

  apply(data: Uint8Array): ApplyResult {
    this.index++;
    return this.sm.apply({ term: 1, index: this.index, type: 'normal', data }, false) as ApplyResult;
  }

  /** `n` generated NB transactions; returns how many committed. */
  run(n: number): void {
    for (let i = 0; i < n; i++) {
      const txn = this.gen.next(dumpDatabaseJson(this.sm.nb) as DbDump);
      const r = this.apply(encodeCommand(nbTxn(txn.ops, [this.index + 1, 7, 7, 7])));
      if (r.kind === 'committed') this.committed++;
    }
  }
}

function concat(pieces: Iterable<Uint8Array>): Buffer {
  return Buffer.concat([...pieces].map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
}

t.test('msgpack headers are the ones msgpackr writes', async (t) => {
  const packr = new Packr({ useRecords: false });
  for (const n of [0, 1, 15, 16, 255, 256, 65535, 65536, 70000]) {
    const array = packr.pack(new Array<number>(n).fill(0));
    const header = msgpackArrayHeader(n);
    t.same(Buffer.from(array.subarray(0, header.byteLength)), Buffer.from(header), `array of ${n}`);
    const bin = packr.pack(new Uint8Array(n));
    const binHeader = msgpackBinHeader(n);
    t.equal(bin.byteLength, binHeader.byteLength + n, `bin of ${n}: header size`);
    t.same(Buffer.from(bin.subarray(0, binHeader.byteLength)), Buffer.from(binHeader), `bin of ${n}`);
  }
});

t.test('the streamed snapshot is snapshot() exactly, in pieces of any size', async (t) => {
  for (const seed of [1, 2, 3]) {
    const d = new Driver(seed);
    d.run(150);
    const name = `hv${seed}`;
    const chassis = d.apply(
      encodeCommand(
        sbTxn(
          [
            { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: name } },
            { op: 'insert', table: 'Chassis', row: { name, hostname: name, encaps: ['named-uuid', 'e'] } },
          ],
          [99, 1, 1, 1],
        ),
      ),
    );
    t.equal(chassis.kind, 'committed', `seed ${seed}: a chassis registered (${JSON.stringify(chassis).slice(0, 200)})`);
    t.ok(d.committed > 50, `seed ${seed}: ${d.committed} transactions committed`);
    const reference = Buffer.from(d.sm.snapshot());
    const stream = d.sm.snapshotStream();
    t.equal(stream.revision, d.sm.revision);
    let steps = 0;
    const measuring = stream.measure(10);
    let r = measuring.next();
    for (; r.done !== true; r = measuring.next()) steps++;
    t.ok(steps > 10, `seed ${seed}: measuring paused every 10 rows (${steps} steps)`);
    t.equal(r.value, reference.byteLength, `seed ${seed}: the measured size`);
    for (const pieceBytes of [1, 333, 64 * 1024, 1024 * 1024]) {
      const pieces = [...stream.pieces(pieceBytes)];
      t.ok(pieces.slice(0, -1).every((p) => p.byteLength >= pieceBytes), `seed ${seed}: pieces of at least ${pieceBytes} bytes but the last`);
      t.ok(concat(pieces).equals(reference), `seed ${seed}: pieces of ${pieceBytes} bytes concatenate to snapshot()`);
    }
  }
});

t.test('the capture holds while later transactions change the state', async (t) => {
  const d = new Driver(11);
  d.run(200);
  const reference = Buffer.from(d.sm.snapshot());
  const revision = d.sm.revision;
  const stream = d.sm.snapshotStream();
  const committedBefore = d.committed;
  d.run(300);
  t.ok(d.committed - committedBefore > 50, `${d.committed - committedBefore} later transactions committed`);
  t.not(Buffer.from(d.sm.snapshot()).equals(reference), 'the state did move on');
  t.equal(measureNow(stream), reference.byteLength, 'measured after the changes, it is the size at the capture');
  const streamed = concat(stream.pieces(4096));
  t.ok(streamed.equals(reference), 'the stream still gives the state it captured');
  const restored = new NbStateMachine({ schema: parseDatabaseSchema(NB_SCHEMA_JSON), projection: new NorthdProjection() });
  restored.restore(streamed);
  t.equal(restored.revision, revision, 'and it restores at the captured revision');
});

t.test('the streamed snapshot carries northd\'s history: Service_Monitor statuses and registered Chassis', async (t) => {
  const d = new Driver(21);
  d.run(100);
  const nb = d.apply(encodeCommand(nbTxn([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'snap-sw', ports: ['set', [['named-uuid', 'p']]], load_balancer: ['named-uuid', 'lb'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'snap-vm', addresses: '00:00:00:00:00:51 10.9.0.1' } },
    { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': 'hc', row: { vip: '10.9.0.100:80' } },
    {
      op: 'insert', table: 'Load_Balancer', 'uuid-name': 'lb',
      row: { name: 'snap-lb', vips: ['map', [['10.9.0.100:80', '10.9.0.1:80']]], health_check: ['named-uuid', 'hc'], ip_port_mappings: ['map', [['10.9.0.1', 'snap-vm:10.9.0.254']]] },
    },
  ], [d.sm.revision + 1, 7, 7, 7])));
  t.equal(nb.kind, 'committed', `the health-checked load balancer (${JSON.stringify(nb).slice(0, 200)})`);
  const sb = (ops: unknown[]): ApplyResult => d.apply(encodeCommand(sbTxn(ops, [99, d.sm.revision + 1, 1, 1])));
  t.equal(sb([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.21', chassis_name: 'hv21' } },
    { op: 'insert', table: 'Chassis', row: { name: 'hv21', hostname: 'hv21', encaps: ['named-uuid', 'e'] } },
  ]).kind, 'committed', 'a chassis registered');
  t.equal(sb([{ op: 'update', table: 'Service_Monitor', where: [['logical_port', '==', 'snap-vm']], row: { status: 'offline' } }]).kind, 'committed', 'a status reported');
  const history = d.projection.history();
  t.same(history.chassis.map(([name]) => name), ['hv21'], 'northd holds the registered Chassis');
  t.same(history.serviceMonitorStatus.map(([, status]) => status), ['offline'], 'and the status');
  const stream = d.sm.snapshotStream();
  measureNow(stream);
  const streamed = concat(stream.pieces(777));
  t.ok(streamed.equals(Buffer.from(d.sm.snapshot())), 'the stream is snapshot()');
  const projection = new NorthdProjection();
  const restored = new NbStateMachine({ schema: parseDatabaseSchema(NB_SCHEMA_JSON), projection });
  restored.restore(streamed);
  t.same(projection.history(), history, 'a restore from the stream has the same history');
  t.same(projection.view().get('HA_Chassis'), d.projection.view().get('HA_Chassis'));
  t.same(projection.view().get('Service_Monitor'), d.projection.view().get('Service_Monitor'), 'and the same Service_Monitor rows');
});
