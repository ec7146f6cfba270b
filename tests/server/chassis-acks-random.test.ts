// Goal: the state machine's shortcuts for chassis transactions change no outcome. hv_cfg is kept
// from counts of the acknowledged nb_cfg values (not a scan of every Chassis_Private per ack),
// and a chassis transaction looks for dangling Chassis/Encap references only in the ports it
// wrote unless it deleted such rows. Method: seeded random chassis transactions (register,
// delete, relink, is-remote on and off, acks alone and many at once, claims and releases, Encap
// changes) and nb_cfg bumps, through NbStateMachine with the real northd projection; after each
// one, hv_cfg and its timestamp are checked against a computation from scratch of what
// ovn-northd does, and every reported port against the rows that exist. A second replica is
// that lags for a stretch, then installs a snapshot, must end byte for byte equal.
// Replay one seed: OVNTS_SEED=<seed> npm run test:one -- tests/server/chassis-acks-random.test.ts
import t from 'tap';
import { Prng } from '../../cluster/prng.js';
import type { Entry } from '../../cluster/types.js';
import { dumpDatabaseJson, parseDatabaseSchema, type Row } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
const chassisNames = ['hv0', 'hv1', 'hv2', 'hv3', 'hv4', 'hv5'];
const ports = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];
const steps = 160;
const only = process.env.OVNTS_SEED;
const seeds = only !== undefined ? [Number(only)] : Array.from({ length: process.env.OVNTS_LONG !== undefined ? 400 : 40 }, (_, i) => i + 1);

class Replica {
  readonly projection = new NorthdProjection();
  readonly sm = new NbStateMachine({ schema, projection: this.projection });
}

const rowsOf = (r: Replica, table: string): Row[] => [...r.sm.chassis.rows(table).values()];
const named = (r: Replica, table: string, name: string): Row | undefined => rowsOf(r, table).find((x) => x.name === name);
const global = (r: Replica): Record<string, unknown> => [...r.sm.nb.rows('NB_Global').values()][0] as unknown as Record<string, unknown>;

/** hv_cfg from scratch, as ovn-northd computes it: the lowest acknowledgement of the chassis that count. */
function expectedHvCfg(r: Replica, nbCfg: number): { cfg: number; ts: number | undefined } {
  const counted = rowsOf(r, 'Chassis_Private').filter((p) => {
    const ref = (p.chassis as readonly string[])[0];
    const chassis = ref === undefined ? undefined : r.sm.chassis.get('Chassis', ref);
    return (chassis?.other_config as ReadonlyMap<string, string> | undefined)?.get('is-remote') !== 'true';
  });
  const cfg = Math.min(nbCfg, ...counted.map((p) => p.nb_cfg as number));
  const at = counted.filter((p) => p.nb_cfg === cfg).map((p) => p.nb_cfg_timestamp as number);
  return { cfg, ts: at.length === 0 ? undefined : Math.max(...at) };
}

/** One random chassis transaction's operations (it may fail: that must change nothing). */
function randomSbOps(rng: Prng, r: Replica): unknown[] {
  const name = rng.pick(chassisNames);
  const chassis = named(r, 'Chassis', name);
  const priv = named(r, 'Chassis_Private', name);
  const nbCfg = global(r).nb_cfg as number;
  const ack = (n: string): unknown => ({ op: 'update', table: 'Chassis_Private', where: [['name', '==', n]], row: { nb_cfg: Math.max(0, nbCfg - rng.nextInt(3)), nb_cfg_timestamp: 1000 + rng.nextInt(50) } });
  switch (rng.nextInt(10)) {
    case 0:
      if (chassis !== undefined) break;
      return [
        { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: `192.0.2.${chassisNames.indexOf(name) + 1}`, chassis_name: name } },
        { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name, hostname: name, encaps: ['named-uuid', 'e'] } },
        ...(priv === undefined ? [{ op: 'insert', table: 'Chassis_Private', row: { name, chassis: ['named-uuid', 'c'], nb_cfg: rng.nextInt(nbCfg + 1), nb_cfg_timestamp: 900 } }] : []),
      ];
    case 1:
      // The Chassis alone (its Chassis_Private keeps counting, with no chassis) or both.
      return [{ op: 'delete', table: 'Chassis', where: [['name', '==', name]] }, ...(rng.chance(0.5) ? [{ op: 'delete', table: 'Chassis_Private', where: [['name', '==', name]] }] : [])];
    case 2:
      return [{ op: 'update', table: 'Chassis', where: [['name', '==', name]], row: { other_config: ['map', rng.chance(0.5) ? [['is-remote', 'true']] : []] } }];
    case 3: {
      // Relink a Chassis_Private to another chassis (or to none).
      const other = named(r, 'Chassis', rng.pick(chassisNames));
      return [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', name]], row: { chassis: other === undefined ? ['set', []] : ['uuid', other._uuid] } }];
    }
    case 4:
      // Many acks in one transaction, as a member batches its agents'.
      return chassisNames.filter(() => rng.chance(0.6)).map(ack);
    case 5: {
      const port = rng.pick(ports);
      const encap = (chassis?.encaps as readonly string[] | undefined)?.[0];
      if (chassis === undefined || rng.chance(0.3)) return [{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', port]], row: { chassis: ['set', []], encap: ['set', []], up: false } }];
      return [{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', port]], row: { chassis: ['uuid', chassis._uuid], encap: encap === undefined ? ['set', []] : ['uuid', encap], up: true } }];
    }
    case 6:
      // A chassis's Encap replaced: the old one goes (garbage), ports naming it must drop it.
      if (chassis === undefined) break;
      return [
        { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: `198.51.100.${rng.nextInt(200) + 1}`, chassis_name: name } },
        { op: 'update', table: 'Chassis', where: [['name', '==', name]], row: { encaps: ['named-uuid', 'e'] } },
      ];
    default:
      return [ack(name)];
  }
  return [ack(name)];
}

for (const seed of seeds) {
  t.test(`seed ${seed}`, async (t) => {
    const rng = new Prng(seed);
    const a = new Replica();
    const b = new Replica();
    let index = 0;
    let uuidSeed = 1;
    let last: { cfg: number; ts: unknown } | undefined;
    const failures: string[] = [];
    const apply = (data: Uint8Array, replicas: readonly Replica[]): void => {
      const e: Entry = { term: 1, index: ++index, type: 'normal', data };
      for (const r of replicas) r.sm.apply(e, false);
    };
    // b follows the log but for a stretch in the middle, after which it installs a's snapshot
    // (a lagging follower): what it derived from its own older state must not survive that.
    let live: Replica[] = [a, b];
    const nb = (ops: unknown[]): void => apply(encodeCommand(nbTxn(ops, [uuidSeed++, 1, 2, 3], 0, 10 * index)), live);
    nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
    nb([
      { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', ports.map((p) => ['named-uuid', p])] } },
      ...ports.map((p, k) => ({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': p, row: { name: p, addresses: `00:00:00:00:00:0${k + 1} 10.0.0.${k + 1}` } })),
    ]);
    for (let step = 0; step < steps && failures.length === 0; step++) {
      if (rng.chance(0.15)) nb([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
      else apply(encodeCommand(sbTxn(randomSbOps(rng, a), [uuidSeed++, 4, 5, 6], 0, 10 * index)), live);
      if (step === steps / 4) live = [a];
      if (step === steps / 2) {
        b.sm.restore(a.sm.snapshot());
        live = [a, b];
      }
      for (const r of live) {
        const which = r === a ? 'a' : 'b';
        const g = global(r);
        const want = expectedHvCfg(r, g.nb_cfg as number);
        if (g.hv_cfg !== want.cfg) failures.push(`step ${step}, replica ${which}: hv_cfg ${String(g.hv_cfg)}, expected ${want.cfg}`);
      }
      const g = global(a);
      const want = expectedHvCfg(a, g.nb_cfg as number);
      // The timestamp is written when hv_cfg moves: the latest of the chassis at the new value.
      if (last !== undefined && g.hv_cfg !== last.cfg && want.ts !== undefined && g.hv_cfg_timestamp !== want.ts) {
        failures.push(`step ${step}: hv_cfg_timestamp ${String(g.hv_cfg_timestamp)}, expected ${want.ts}`);
      }
      last = { cfg: g.hv_cfg as number, ts: g.hv_cfg_timestamp };
      for (const [port, owned] of a.projection.chassisOwned()) {
        for (const u of [...(owned.chassis ?? []), ...(owned.additional_chassis ?? [])]) if (a.sm.chassis.get('Chassis', u) === undefined) failures.push(`step ${step}: ${port} names a missing Chassis`);
        for (const u of [...(owned.encap ?? []), ...(owned.additional_encap ?? [])]) if (a.sm.chassis.get('Encap', u) === undefined) failures.push(`step ${step}: ${port} names a missing Encap`);
      }
    }
    t.same(failures, [], `replay: OVNTS_SEED=${seed} npm run test:one -- tests/server/chassis-acks-random.test.ts`);
    t.equal(JSON.stringify(dumpDatabaseJson(b.sm.nb)), JSON.stringify(dumpDatabaseJson(a.sm.nb)), 'the restored replica ends with the same NB');
    const owned = (r: Replica): unknown => [...r.projection.chassisOwned()].sort((x, y) => (x[0] < y[0] ? -1 : 1));
    t.same(owned(b), owned(a), 'and the same chassis-owned columns');
  });
}
