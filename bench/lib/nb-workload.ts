// The benchmark NB workloads, as sequences of OVSDB transactions (transact params without the
// database name). The same generator feeds our engine and the real ovsdb-server, so both
// receive exactly the same operations.

/** Executes one transaction and returns its result array (as the transact reply has it). */
export type Exec = (ops: unknown[]) => Promise<unknown[]> | unknown[];

const hex2 = (n: number): string => (n & 0xff).toString(16).padStart(2, '0');

/** One Logical_Switch insert per transaction, names unique. */
export function lsInsert(i: number): unknown[] {
  return [{ op: 'insert', table: 'Logical_Switch', row: { name: `ls-${i}` } }];
}

export interface TopologyShape {
  readonly switches: number;
  readonly portsPerSwitch: number;
  readonly acls: number;
}

export const tenThousandPorts: TopologyShape = { switches: 200, portsPerSwitch: 50, acls: 10 };

function uuidOf(result: unknown): string {
  const u = (result as { uuid?: unknown }).uuid;
  if (!Array.isArray(u) || u[0] !== 'uuid' || typeof u[1] !== 'string') throw new Error(`insert failed: ${JSON.stringify(result)}`);
  return u[1];
}

function checkOk(results: unknown[]): void {
  for (const r of results) {
    if (r !== null && typeof r === 'object' && 'error' in r) throw new Error(`transaction failed: ${JSON.stringify(results)}`);
  }
}

/**
 * Builds the benchmark topology: one router; per switch one transaction with the switch, its
 * VIF ports (with addresses), a router-type port and the router port it patches to; then one
 * transaction with a port group holding every VIF port and `acls` ACLs on it.
 * Returns the number of transactions and rows inserted.
 */
export async function loadTopology(exec: Exec, shape: TopologyShape): Promise<{ transactions: number; rows: number }> {
  let rows = 0;
  const first = await exec([{ op: 'insert', table: 'Logical_Router', 'uuid-name': 'lr', row: { name: 'lr0' } }]);
  checkOk(first);
  const router = uuidOf(first[0]);
  rows++;
  const vifs: string[] = [];
  for (let i = 0; i < shape.switches; i++) {
    const ops: unknown[] = [];
    const portNames: unknown[] = [];
    for (let j = 0; j < shape.portsPerSwitch; j++) {
      const name = `p${j}`;
      portNames.push(['named-uuid', name]);
      ops.push({
        op: 'insert',
        table: 'Logical_Switch_Port',
        'uuid-name': name,
        row: { name: `ls${i}-p${j}`, addresses: `0a:00:${hex2(i >> 8)}:${hex2(i)}:00:${hex2(j)} 10.${(i >> 8) & 0xff}.${i & 0xff}.${j + 10}` },
      });
    }
    portNames.push(['named-uuid', 'rp']);
    ops.push({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'rp', row: { name: `ls${i}-rp`, type: 'router', addresses: 'router', options: ['map', [['router-port', `lrp${i}`]]] } });
    ops.push({ op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'lrp', row: { name: `lrp${i}`, mac: `0a:01:00:00:${hex2(i >> 8)}:${hex2(i)}`, networks: `10.${(i >> 8) & 0xff}.${i & 0xff}.1/24` } });
    ops.push({ op: 'insert', table: 'Logical_Switch', row: { name: `ls${i}`, ports: ['set', portNames] } });
    ops.push({ op: 'mutate', table: 'Logical_Router', where: [['_uuid', '==', ['uuid', router]]], mutations: [['ports', 'insert', ['named-uuid', 'lrp']]] });
    const res = await exec(ops);
    checkOk(res);
    for (let j = 0; j < shape.portsPerSwitch; j++) vifs.push(uuidOf(res[j]));
    rows += shape.portsPerSwitch + 3;
  }
  const ops: unknown[] = [];
  const acls: unknown[] = [];
  for (let k = 0; k < shape.acls; k++) {
    acls.push(['named-uuid', `acl${k}`]);
    ops.push({ op: 'insert', table: 'ACL', 'uuid-name': `acl${k}`, row: { priority: 1000 + k, direction: 'to-lport', match: `outport == @pg0 && ip4.src == 10.0.${k}.0/24 && tcp.dst == ${80 + k}`, action: 'allow-related' } });
  }
  ops.push({ op: 'insert', table: 'Port_Group', row: { name: 'pg0', ports: ['set', vifs.map((u) => ['uuid', u])], acls: ['set', acls] } });
  const res = await exec(ops);
  checkOk(res);
  rows += shape.acls + 1;
  return { transactions: shape.switches + 2, rows };
}
