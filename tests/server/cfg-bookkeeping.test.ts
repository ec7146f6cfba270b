// NB_Global's *_cfg bookkeeping (sb_cfg, hv_cfg, their timestamps) is written by the state
// machine and read by no northd node: a chassis acknowledgement that only moves hv_cfg costs
// no projection pass, while a client's nb_cfg bump (SB_Global.nb_cfg follows it) still does,
// and the SB view stays what a projection of everything would give. The writes that bump
// nb_cfg are the ones whose commit index a leader sends its followers at once.
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import type { Database, DbDelta } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import { broadcastsCommit, bulkOpsMin, waitsOnFollowers } from '../../server/central-node.js';
import { LaggardCursor, NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';
import { canonicalText } from '../../northd/sb-changes.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

/** northd, counting the NB deltas it is handed. */
class CountingNorthd extends NorthdProjection {
  readonly applied: DbDelta[] = [];
  override apply(nb: Database, delta: DbDelta, revision: number): void {
    this.applied.push(delta);
    super.apply(nb, delta, revision);
  }
}

t.test('a chassis ack that only moves hv_cfg is not projected; an nb_cfg bump is', async (t) => {
  const northd = new CountingNorthd();
  const sm = new NbStateMachine({ schema, projection: northd });
  let index = 0;
  let seed = 1;
  const nb = (ops: unknown[]): void => void sm.apply({ term: 1, index: ++index, type: 'normal', data: encodeCommand(nbTxn(ops, [seed++, 1, 2, 3], 0, 1000 + index)) } as Entry, false);
  const sb = (ops: unknown[]): void => void sm.apply({ term: 1, index: ++index, type: 'normal', data: encodeCommand(sbTxn(ops, [seed++, 4, 5, 6], 0, 5000 + index)) } as Entry, false);
  const global = (): Record<string, unknown> => [...sm.nb.rows('NB_Global').values()][0] as unknown as Record<string, unknown>;

  nb([{ op: 'insert', table: 'NB_Global', row: {} }, { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]);
  sb([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'] } },
    { op: 'insert', table: 'Chassis_Private', row: { name: 'hv1', chassis: ['named-uuid', 'c'], nb_cfg: 0, nb_cfg_timestamp: 100 } },
  ]);

  const before = northd.applied.length;
  nb([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  t.equal(northd.applied.length, before + 1, 'the nb_cfg bump is projected');
  t.equal(global().sb_cfg, 1, 'sb_cfg follows in the same revision');
  t.equal(global().hv_cfg, 0, 'hv_cfg waits for the chassis');
  const sbGlobal = [...(northd.view().get('SB_Global')?.values() ?? [])][0] as unknown as Record<string, unknown>;
  t.equal(sbGlobal.nb_cfg, 1, 'SB_Global.nb_cfg follows NB_Global.nb_cfg');

  sb([{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv1']], row: { nb_cfg: 1, nb_cfg_timestamp: 4242 } }]);
  t.equal(global().hv_cfg, 1, 'the ack moved hv_cfg');
  t.equal(global().hv_cfg_timestamp, 4242, 'with the chassis timestamp');
  t.equal(northd.applied.length, before + 1, 'the ack cost no projection pass');

  // The view equals that of a projection handed every NB change from scratch.
  const fresh = new NorthdProjection();
  fresh.restore(sm.nb, undefined, sm.revision);
  const text = (p: NorthdProjection): string => canonicalText(new Map([...p.view()].filter(([, rows]) => rows.size > 0)));
  t.equal(text(northd), text(fresh), 'the view is what a full projection of the NB gives');
});

t.test('the writes whose clients wait on every member (nb_cfg of NB_Global and Chassis_Private), and bulk ones: their commit index goes at once', async (t) => {
  const bump = { op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] };
  const ack = { op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv1']], row: { nb_cfg: 7, nb_cfg_timestamp: 1 } };
  const ls = { op: 'insert', table: 'Logical_Switch', row: { name: 'a' } };
  t.equal(waitsOnFollowers([ls, bump]), true, 'an nb_cfg bump (--wait)');
  t.equal(waitsOnFollowers([{ op: 'update', table: 'NB_Global', where: [], row: { nb_cfg: 3 } }]), true, 'nb_cfg set outright');
  t.equal(waitsOnFollowers([ack]), true, 'an agent\'s acknowledgement');
  t.equal(waitsOnFollowers([ls]), false, 'a plain write');
  t.equal(waitsOnFollowers([{ op: 'update', table: 'NB_Global', where: [], row: { options: ['map', []] } }]), false, 'NB_Global without nb_cfg');
  t.equal(waitsOnFollowers([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['external_ids', 'insert', ['map', []]]] }]), false, 'another column mutated');
  t.equal(waitsOnFollowers([null, 5, { op: 'update', table: 'NB_Global', row: null }]), false, 'malformed operations are no reason');
  t.equal(broadcastsCommit([ack]), true, 'broadcast: an acknowledgement');
  t.equal(broadcastsCommit(Array.from({ length: bulkOpsMin - 1 }, () => ls)), false, 'broadcast: not a transaction one operation short of bulk');
  t.equal(broadcastsCommit(Array.from({ length: bulkOpsMin }, () => ls)), true, 'broadcast: a bulk transaction');
});

t.test('hvCfgLaggard answers as hvCfgWith does, whatever its cursor holds', async (t) => {
  const sm = new NbStateMachine({ schema, projection: new NorthdProjection() });
  let index = 0;
  let seed = 1;
  const apply = (kind: 'nb' | 'sb', ops: unknown[]): void => {
    const data = kind === 'nb' ? nbTxn(ops, [seed++, 1, 2, 3], 0, 1000 + index) : sbTxn(ops, [seed++, 4, 5, 6], 0, 5000 + index);
    const r = sm.apply({ term: 1, index: ++index, type: 'normal', data: encodeCommand(data) } as Entry, false);
    if (r.kind !== 'committed') throw new Error(`${kind} transaction not committed: ${JSON.stringify(r)}`);
  };
  apply('nb', [{ op: 'insert', table: 'NB_Global', row: { nb_cfg: 5 } }]);
  const n = 12;
  for (let i = 0; i < n; i++) {
    apply('sb', [
      { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: `192.0.2.${i + 1}`, chassis_name: `hv${i}` } },
      // Every fourth chassis is remote (other_config:is-remote=true): it does not count.
      { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: `hv${i}`, hostname: `hv${i}`, encaps: ['named-uuid', 'e'], other_config: ['map', i % 4 === 3 ? [['is-remote', 'true']] : []] } },
      { op: 'insert', table: 'Chassis_Private', row: { name: `hv${i}`, chassis: ['named-uuid', 'c'], nb_cfg: i % 6, nb_cfg_timestamp: 1 } },
    ]);
  }
  const privs = [...sm.chassis.rows('Chassis_Private').values()].map((r) => r._uuid);
  let x = 0x2545f491;
  const random = (k: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % k;
  };
  let checked = 0;
  // One cursor kept across rounds (acks that go down as well as up, targets that come back),
  // sometimes replaced by a fresh one or by one pointing anywhere.
  let cursor = new LaggardCursor();
  for (let round = 0; round < 400; round++) {
    const live = new Map<string, number>();
    for (const u of privs) if (random(2) === 0) live.set(u, random(8));
    const get = (u: string): number | undefined => live.get(u);
    const target = random(9);
    const change = random(6);
    if (change === 0) cursor = new LaggardCursor();
    else if (change === 1) Object.assign(cursor, { target, at: random(privs.length + 2) });
    const lag = sm.hvCfgLaggard(target, get, cursor);
    const reaches = sm.hvCfgWith(get) >= target;
    if ((lag === undefined) !== reaches) {
      t.fail(`round ${round}: target ${target}: laggard ${lag} but hvCfgWith ${sm.hvCfgWith(get)}`);
      return;
    }
    if (lag !== undefined && lag !== 'NB_Global') {
      const row = sm.chassis.get('Chassis_Private', lag) as Record<string, unknown>;
      if (Math.max(row.nb_cfg as number, live.get(lag) ?? 0) >= target) t.fail(`round ${round}: ${lag} named, but it acknowledged ${target}`);
    }
    checked++;
  }
  t.equal(checked, 400, 'every round agreed');
  t.equal(sm.hvCfgLaggard(6, () => undefined), 'NB_Global', 'nb_cfg below the target holds it back itself');
});

t.test('hvCfgLaggard: a round of n acks looks at each row a few times, in whatever order the acks come', async (t) => {
  const sm = new NbStateMachine({ schema, projection: new NorthdProjection() });
  let index = 0;
  const apply = (kind: 'nb' | 'sb', ops: unknown[]): void => {
    const data = kind === 'nb' ? nbTxn(ops, [index + 1, 1, 2, 3], 0, 1000 + index) : sbTxn(ops, [index + 1, 4, 5, 6], 0, 5000 + index);
    const r = sm.apply({ term: 1, index: ++index, type: 'normal', data: encodeCommand(data) } as Entry, false);
    if (r.kind !== 'committed') throw new Error(`${kind} transaction not committed: ${JSON.stringify(r)}`);
  };
  const n = 300;
  apply('nb', [{ op: 'insert', table: 'NB_Global', row: { nb_cfg: 3 } }]);
  for (let i = 0; i < n; i++) {
    apply('sb', [
      { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: `10.0.${i >> 8}.${i & 255}`, chassis_name: `hv${i}` } },
      { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: `hv${i}`, hostname: `hv${i}`, encaps: ['named-uuid', 'e'] } },
      { op: 'insert', table: 'Chassis_Private', row: { name: `hv${i}`, chassis: ['named-uuid', 'c'], nb_cfg: 0, nb_cfg_timestamp: 1 } },
    ]);
  }
  const privs = [...sm.chassis.rows('Chassis_Private').values()].map((r) => r._uuid);
  const orders: [string, string[]][] = [['the rows\' order', privs], ['the reverse', [...privs].reverse()], ['every seventh', privs.map((_, i) => privs[(i * 7) % n] as string)]];
  for (const [target, [name, order]] of orders.entries()) {
    const live = new Map<string, number>();
    let lookups = 0;
    const get = (u: string): number | undefined => {
      lookups++;
      return live.get(u);
    };
    const cursor = new LaggardCursor();
    const answers: (string | undefined)[] = [];
    for (const u of order) {
      answers.push(sm.hvCfgLaggard(target + 1, get, cursor));
      live.set(u, target + 1);
    }
    answers.push(sm.hvCfgLaggard(target + 1, get, cursor));
    t.ok(answers.slice(0, -1).every((a) => a !== undefined) && answers.at(-1) === undefined, `${name}: held back until the last ack, not after`);
    t.ok(lookups <= 5 * n, `${name}: ${lookups} row lookups for ${n} acks`);
  }
});
