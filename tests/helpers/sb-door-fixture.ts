// An OVN_Southbound door on a follower of an in-process three-member cluster holding one switch
// with a port and one chassis, for tests that throw bad requests at it and check that nothing
// changed.
import type { Test } from 'tap';
import { dumpDatabaseJson, rowToJson } from '../../ovsdb/index.js';
import type { OvsdbDoor, OvsdbDoorLimits } from '../../server/ovsdb-door.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { startCentralCluster } from './central-cluster.js';
import { testdirAfterTeardowns } from './testdir.js';

export interface SbDoorFixture {
  readonly door: OvsdbDoor;
  readonly address: { host: string; port: number };
  /** The UUID of the switch port's Port_Binding. */
  readonly pbUuid: string;
  /** Waits until the follower has applied everything the leader has. */
  caughtUp(): Promise<void>;
  /** The follower's whole SB view and chassis tables, as text. */
  snapshot(): string;
}

export async function startSbDoorFixture(t: Test, limits: Partial<OvsdbDoorLimits> = {}): Promise<SbDoorFixture> {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader');
  const follower = cluster.members.find((m) => m !== leader);
  if (leader === undefined || follower === undefined) throw new Error('no leader');
  await leader.client.transact([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'p'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
  ]);
  await leader.client.transact([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'] } },
  ], 'OVN_Southbound');
  const door = await startOvsdbDoor({ central: follower.central, listen: { host: '127.0.0.1', port: 0 }, db: 'OVN_Southbound', limits });
  t.teardown(() => door.close());
  const caughtUp = async (): Promise<void> => {
    while (follower.central.revision < leader.central.revision) await new Promise((r) => setTimeout(r, 10));
  };
  await caughtUp();
  return {
    door,
    address: door.address as { host: string; port: number },
    pbUuid: [...follower.central.sbView().rows('Port_Binding').keys()][0] as string,
    caughtUp,
    snapshot: () => {
      const view = follower.central.sbView();
      const out: Record<string, unknown[]> = {};
      for (const [name, schema] of view.schema.tables) out[name] = [...view.rows(name).values()].map((r) => rowToJson(schema, r));
      return JSON.stringify([out, dumpDatabaseJson(follower.central.sm.chassis)]);
    },
  };
}
