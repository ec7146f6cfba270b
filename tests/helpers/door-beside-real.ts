// A differential's two sides: a real standalone ovsdb-server on OVN's NB schema, and an OVSDB
// door on a one-member in-process central with no projection (the real side has no northd, so
// nothing else writes to either NB). Both stop when `t` ends.
import { join } from 'node:path';
import type { Test } from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { CentralNode } from '../../server/central-node.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { startRealOvsdbServer, type RealOvsdbServer } from './real-ovsdb.js';
import { testdirAfterTeardowns } from './testdir.js';

export const NB_SCHEMA_PATH = '/usr/share/ovn/ovn-nb.ovsschema';

export interface DoorBesideReal {
  readonly real: RealOvsdbServer;
  readonly central: CentralNode;
  /** The door's remote, `tcp:127.0.0.1:PORT`. */
  readonly doorRemote: string;
}

export async function startDoorBesideReal(t: Test, name: string): Promise<DoorBesideReal> {
  const real = await startRealOvsdbServer({ dir: testdirAfterTeardowns(t), schemaPath: NB_SCHEMA_PATH });
  t.teardown(() => real.stop());
  const network = new LocalNetwork(name);
  const central = await CentralNode.start({ id: 1, clusterId: name, dataDir: join(testdirAfterTeardowns(t), 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10, projection: null });
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(async () => {
    await door.close();
    await central.stop();
  });
  return { real, central, doorRemote: `tcp:127.0.0.1:${(door.address as { port: number }).port}` };
}
