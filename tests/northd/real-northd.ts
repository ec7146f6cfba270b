// A sandbox of the real OVN 23.03 for differential tests of northd: a real NB and SB
// ovsdb-server and the real ovn-northd between them, all in a test folder. Topologies are built
// with the real ovn-nbctl, one transaction per step (each waits until ovn-northd has projected
// it, so tunnel keys are allocated in the same order as ours). After every step the real NB is
// read back and the difference is applied to our NB as one transaction with the same row UUIDs,
// so both northds see the same rows (and ours sees them incrementally). Chassis are registered,
// deleted and bound to ports with the real ovn-sbctl; the real Chassis and Encap rows are
// mirrored into ours (same UUIDs) and bindings repeated, through the chassis write path of our
// central (server/chassis-store.ts applySbTxn), and what it reports reaches our northd as it
// does in the state machine. Also here: a real SB ovsdb-server holding a copy of our view
// (realSbOf, startSbCopy) for the real ovn-trace, and OVN's own parser (through ovn-trace)
// judging our view's flows beside our agent's compiler (compareWithOvnParser).
import type { Test } from 'tap';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Northd, SbView } from '../../northd/index.js';
import { createNorthd } from '../../northd/index.js';
import type { ColumnType, Row, Value } from '../../ovsdb/index.js';
import { Database, parseDatabaseSchema, uuidSource, valueToJson } from '../../ovsdb/index.js';
import type { SbTxnOutcome } from '../../server/chassis-store.js';
import { applySbTxn, chassisSchema, vxlanModeOf } from '../../server/chassis-store.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { agentCompile } from '../helpers/agent-compiles.js';
import { dumpReal, realTransact } from '../helpers/differential.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import type { DbDump, Json, JsonRow } from '../helpers/ovsdb-json.js';
import { canonicalJson, parseSchemaLite } from '../helpers/ovsdb-json.js';
import { stopPid } from '../helpers/process.js';
import { startRealOvsdbServer } from '../helpers/real-ovsdb.js';
import type { NbFixture } from './nb-fixture.js';
import { nbFixture } from './nb-fixture.js';

const execFileAsync = promisify(execFile);
export const NB_SCHEMA_PATH = '/usr/share/ovn/ovn-nb.ovsschema';
export const SB_SCHEMA_PATH = '/usr/share/ovn/ovn-sb.ovsschema';
const DAEMON_START_TIMEOUT_MS = 10_000;
const WAIT_TIMEOUT_S = 30;

/** Why the real OVN cannot be used here, or false when it can. */
export async function missingTools(): Promise<string | false> {
  for (const tool of ['ovn-northd', 'ovn-nbctl', 'ovn-sbctl', 'ovsdb-server', 'ovsdb-tool']) {
    try {
      await execFileAsync(tool, ['--version']);
    } catch {
      return `${tool} is not installed`;
    }
  }
  if (!fs.existsSync(NB_SCHEMA_PATH) || !fs.existsSync(SB_SCHEMA_PATH)) return 'OVN schemas are not installed';
  return false;
}

type OvsJson = string | number | boolean | [string, unknown];

/** An OVSDB JSON datum as plain values: sets as arrays, maps as objects, UUIDs as strings. */
function plain(v: OvsJson): unknown {
  if (!Array.isArray(v)) return v;
  const [tag, body] = v;
  if (tag === 'uuid' || tag === 'named-uuid') return body;
  if (tag === 'set') return (body as OvsJson[]).map(plain);
  if (tag === 'map') return Object.fromEntries((body as [OvsJson, OvsJson][]).map(([k, val]) => [plain(k), plain(val)]));
  return v;
}

/** The value of a set-or-scalar column as an array (ovsdb-server's JSON gives a 1-element set as its atom). */
export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [v];
}

export interface RealSandbox {
  readonly nbSocket: string;
  readonly sbSocket: string;
  /** Our NB (a mirror of the real one, row UUIDs included) and our northd fed from it. */
  readonly fx: NbFixture;
  readonly northd: Northd;
  /** Runs one ovn-nbctl transaction on the real NB (waiting for the real SB) and mirrors it into ours. */
  nbctl(args: readonly string[]): Promise<void>;
  /** Every row of a real SB table, with plain values. */
  sbList(table: string): Promise<Record<string, unknown>[]>;
  /** ovn-sbctl with these arguments against the real SB. */
  sbctl(args: readonly string[]): Promise<string>;
  /**
   * One ovn-sbctl transaction that changes Chassis rows (chassis-add, chassis-del) on the real
   * SB, mirrored into ours; both northds are waited for.
   */
  chassisCtl(args: readonly string[]): Promise<void>;
  /** Binds a port to a chassis (undefined: unbinds it) on both sides (ovn-sbctl lsp-bind / lsp-unbind). */
  bind(port: string, chassis: string | undefined): Promise<void>;
  /** Our chassis-owned SB tables (Chassis, Encap, ...), as our chassis write path keeps them. */
  readonly chassisDb: Database;
  /**
   * One chassis transaction on our side, through the rules a chassis writes by
   * (server/chassis-store.ts, as the SB door and the agent stream apply them), its reports
   * then handed to our northd.
   */
  chassisTxn(ops: readonly unknown[]): SbTxnOutcome;
}

/** The ops that turn our NB's copy `before` into `after` (real NB dumps), keeping row UUIDs. */
function mirrorOps(before: DbDump, after: DbDump): unknown[] {
  const ops: unknown[] = [];
  const strip = (row: JsonRow): Record<string, Json> => {
    const { _version: _v, ...rest } = row;
    return rest;
  };
  for (const table of Object.keys(after).sort()) {
    const old = before[table] ?? {};
    const now = after[table] ?? {};
    for (const uuid of Object.keys(now).sort()) {
      const row = strip(now[uuid] as JsonRow);
      const prev = old[uuid];
      if (prev === undefined) {
        ops.push({ op: 'insert', table, uuid, row });
        continue;
      }
      const prevRow = strip(prev);
      const changed: Record<string, Json> = {};
      for (const [column, value] of Object.entries(row)) {
        if (canonicalJson(value) !== canonicalJson(prevRow[column] ?? null)) changed[column] = value;
      }
      if (Object.keys(changed).length > 0) ops.push({ op: 'update', table, where: [['_uuid', '==', ['uuid', uuid]]], row: changed });
    }
    for (const uuid of Object.keys(old).sort()) {
      if (now[uuid] === undefined) ops.push({ op: 'delete', table, where: [['_uuid', '==', ['uuid', uuid]]] });
    }
  }
  return ops;
}

/** Starts the real NB, SB and ovn-northd in a test folder (stopped by the test's teardown). */
export async function startRealSandbox(t: Test): Promise<RealSandbox> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'northd-diff-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const nbServer = await startRealOvsdbServer({ dir: path.join(dir, 'nb'), schemaPath: NB_SCHEMA_PATH });
  t.teardown(() => nbServer.stop());
  const sbServer = await startRealOvsdbServer({ dir: path.join(dir, 'sb'), schemaPath: SB_SCHEMA_PATH });
  t.teardown(() => sbServer.stop());

  const northdDir = path.join(dir, 'northd');
  fs.mkdirSync(northdDir);
  const pidfile = path.join(northdDir, 'ovn-northd.pid');
  await execFileAsync('ovn-northd', [
    `--ovnnb-db=unix:${nbServer.socketPath}`, `--ovnsb-db=unix:${sbServer.socketPath}`, '--detach', '--no-chdir',
    `--pidfile=${pidfile}`, `--log-file=${path.join(northdDir, 'ovn-northd.log')}`, `--unixctl=${path.join(northdDir, 'ovn-northd.ctl')}`,
    '-vconsole:off',
  ], { timeout: DAEMON_START_TIMEOUT_MS });
  const northdPid = Number.parseInt(fs.readFileSync(pidfile, 'utf8').trim(), 10);
  t.teardown(() => stopPid(northdPid, (argv) => (argv[0] ?? '').endsWith('ovn-northd') && argv.includes(`--pidfile=${pidfile}`)));

  const schema = parseSchemaLite(JSON.parse(fs.readFileSync(NB_SCHEMA_PATH, 'utf8')));
  const client = await JsonRpcClient.connect({ path: nbServer.socketPath });
  t.teardown(() => client.close());

  const fx = nbFixture();
  const northd = createNorthd();
  let mirrored: DbDump = {};
  const mirror = async (): Promise<void> => {
    const now = await dumpReal(client, 'OVN_Northbound', schema);
    const ops = mirrorOps(mirrored, now);
    mirrored = now;
    if (ops.length > 0) northd.apply(fx.db, fx.run(ops));
  };
  const nbDb = `--db=unix:${nbServer.socketPath}`;
  const sbDb = `--db=unix:${sbServer.socketPath}`;
  // ovn-northd writes NB_Global once it starts: wait for it, then mirror that first state.
  await execFileAsync('ovn-nbctl', [nbDb, `--timeout=${WAIT_TIMEOUT_S}`, '--wait=sb', 'sync']);
  await mirror();

  // Our chassis-owned tables, written as a chassis writes them.
  const chassisDb = new Database(chassisSchema());
  const sbJson = JSON.parse(fs.readFileSync(SB_SCHEMA_PATH, 'utf8')) as { tables: Record<string, unknown> };
  const chassisTables = parseSchemaLite({ tables: { Chassis: sbJson.tables['Chassis'], Encap: sbJson.tables['Encap'] } });
  const sbClient = await JsonRpcClient.connect({ path: sbServer.socketPath });
  t.teardown(() => sbClient.close());
  let mirroredChassis: DbDump = {};
  let sbSeed = 0;
  /** One chassis transaction on our side; what it reports is handed to our northd. */
  const applyChassisTxn = (ops: readonly unknown[]): SbTxnOutcome => {
    const rows = (table: string): ReadonlyMap<string, Row> => northd.view().get(table) ?? new Map<string, Row>();
    const out = applySbTxn(chassisDb, [...ops], {
      newUuid: uuidSource([0x5b, ++sbSeed, 0, 1]), portBindings: rows('Port_Binding'), owned: northd.chassisOwned(), serviceMonitors: rows('Service_Monitor'),
      igmpGroups: true, migrationWrites: true, controllerEvents: true, pdWrites: true,
    });
    if (out.kind !== 'committed') return out;
    if (out.ports.size > 0 || out.chassis.size > 0 || out.hostnames.size > 0) northd.setChassisOwned(fx.db, out.ports, out.chassis, out.hostnames);
    if (out.monitors.size > 0) northd.setServiceMonitorStatus(fx.db, out.monitors);
    if (out.igmp.size > 0) northd.setIgmpGroups(fx.db, out.igmp);
    if (out.delta.changes.some((c) => c.table === 'Chassis' || c.table === 'Encap')) northd.setVxlanMode(fx.db, vxlanModeOf(chassisDb));
    return out;
  };
  /** The same, for the steps that must succeed. */
  const chassisTxn = (ops: readonly unknown[]): void => {
    const out = applyChassisTxn(ops);
    if (out.kind !== 'committed' || out.results.some((r) => r !== null && typeof r === 'object' && 'error' in r)) throw new Error(`chassis transaction failed: ${JSON.stringify(out)}`);
  };
  // The real ovn-northd hears of an SB change on its own: the first nb_cfg round trip may
  // complete before it has run on that change, the second one cannot (its SB transactions
  // are sequential, and the change reached it before the first round trip's commit reply).
  const waitRealNorthd = async (): Promise<void> => {
    for (let i = 0; i < 2; i++) await execFileAsync('ovn-nbctl', [nbDb, `--timeout=${WAIT_TIMEOUT_S}`, '--wait=sb', 'sync']);
  };
  return {
    nbSocket: nbServer.socketPath,
    sbSocket: sbServer.socketPath,
    fx,
    northd,
    async nbctl(args: readonly string[]): Promise<void> {
      await execFileAsync('ovn-nbctl', [nbDb, `--timeout=${WAIT_TIMEOUT_S}`, '--wait=sb', ...args]);
      await mirror();
    },
    // A select on the open connection: the values ovn-sbctl --format=json list prints (both
    // are ovsdb-server's JSON of the datum), without a process and a full SB download per table
    // (compareWithReal reads about fifteen tables, and that was most of this suite's time).
    async sbList(table: string): Promise<Record<string, unknown>[]> {
      const [result] = await realTransact(sbClient, 'OVN_Southbound', [{ op: 'select', table, where: [] }]);
      const rows = (result as { rows?: Record<string, OvsJson>[] } | undefined)?.rows;
      if (rows === undefined) throw new Error(`select on ${table} failed: ${JSON.stringify(result)}`);
      return rows.map((row) => Object.fromEntries(Object.entries(row).filter(([column]) => column !== '_version').map(([column, v]) => [column, plain(v)])));
    },
    async sbctl(args: readonly string[]): Promise<string> {
      return (await execFileAsync('ovn-sbctl', [sbDb, ...args])).stdout;
    },
    async chassisCtl(args: readonly string[]): Promise<void> {
      await execFileAsync('ovn-sbctl', [sbDb, ...args]);
      const now = await dumpReal(sbClient, 'OVN_Southbound', chassisTables);
      const ops = mirrorOps(mirroredChassis, now);
      mirroredChassis = now;
      if (ops.length > 0) chassisTxn(ops);
      await waitRealNorthd();
      await mirror(); // Logical_Switch_Port.up follows the bindings a deleted chassis had.
    },
    async bind(port: string, chassis: string | undefined): Promise<void> {
      await execFileAsync('ovn-sbctl', [sbDb, ...(chassis === undefined ? ['lsp-unbind', port] : ['lsp-bind', port, chassis])]);
      const uuid = chassis === undefined ? undefined : [...chassisDb.rows('Chassis').values()].find((r) => r['name'] === chassis)?._uuid;
      if (chassis !== undefined && uuid === undefined) throw new Error(`no chassis ${chassis} in our SB`);
      chassisTxn([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', port]], row: { chassis: ['set', uuid === undefined ? [] : [['uuid', uuid]]] } }]);
      await waitRealNorthd();
      await mirror(); // Logical_Switch_Port.up, which the real ovn-northd sets from the binding.
    },
    chassisTxn(ops: readonly unknown[]): SbTxnOutcome {
      return applyChassisTxn(ops);
    },
    chassisDb,
  };
}

export interface SbCopy {
  readonly socketPath: string;
}

/**
 * A real SB ovsdb-server holding a copy of an ovnts SB view (same row UUIDs), so that the
 * real ovn-trace can walk ovnts's flows exactly as it walks ovn-northd's.
 */
export async function realSbOf(t: Test, view: SbView): Promise<SbCopy> {
  const copy = await startSbCopy(view);
  t.teardown(() => copy.stop());
  return copy;
}

/** realSbOf for a caller that stops it itself (its folder goes with it). */
export async function startSbCopy(view: SbView): Promise<SbCopy & { stop(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'northd-sbcopy-'));
  const server = await startRealOvsdbServer({ dir, schemaPath: SB_SCHEMA_PATH }).catch((e: unknown) => {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  const stop = async (): Promise<void> => {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await loadSbCopy(server.socketPath, view);
  } catch (e) {
    await stop();
    throw e;
  }
  return { socketPath: server.socketPath, stop };
}

async function loadSbCopy(socketPath: string, view: SbView): Promise<void> {
  const schema = parseDatabaseSchema(SB_SCHEMA_JSON);
  const ops: unknown[] = [];
  for (const [table, rows] of view) {
    const columns = schema.tables.get(table)?.columns;
    if (columns === undefined) throw new Error(`no SB table ${table}`);
    for (const row of rows.values()) {
      const json: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(row)) {
        if (name === '_uuid' || name === '_version') continue;
        const type = (columns.get(name) as { type: ColumnType } | undefined)?.type;
        if (type === undefined) throw new Error(`no column ${table}.${name}`);
        json[name] = valueToJson(type, value as Value);
      }
      ops.push({ op: 'insert', table, uuid: row._uuid, row: json });
    }
  }
  const client = await JsonRpcClient.connect({ path: socketPath });
  try {
    const result = (await client.request('transact', ['OVN_Southbound', ...ops])) as { error?: string; details?: string }[];
    const failed = result.find((r) => r !== null && r.error !== undefined);
    if (failed !== undefined) throw new Error(`loading the SB copy failed: ${JSON.stringify(failed)}`);
  } finally {
    await client.close();
  }
}

/**
 * What the real ovn-trace (OVN 23.03.1's own parser, as ovn-controller's) refuses of the logical
 * flows of the SB at `sbSocket`: it parses every flow on start and warns for each it cannot,
 * with the flow's match (a match that does not parse) or actions (actions that do not).
 */
export async function ovnTraceRefusals(sbSocket: string, dpName: string): Promise<{ readonly matches: ReadonlySet<string>; readonly actions: ReadonlySet<string> }> {
  // The trace itself does not matter (it may fail: an inport need not exist): the flows are
  // parsed before it.
  const out = await execFileAsync('ovn-trace', [`--db=unix:${sbSocket}`, '--minimal', dpName, 'inport == "ovnts-probe" && eth.src == 00:00:00:00:00:01'], { timeout: 60_000 })
    .catch((e: { stderr?: string }) => ({ stderr: e.stderr ?? '' }));
  const matches = new Set<string>();
  const actions = new Set<string>();
  for (const line of out.stderr.split('\n')) {
    const m = /\|WARN\|(.*): parsing (expression|actions) failed \(/.exec(line);
    if (m !== null) (m[2] === 'expression' ? matches : actions).add(m[1] as string);
  }
  return { matches, actions };
}

/** `ovn-trace --minimal` of a microflow entering logical datapath `dp` (`options`: e.g. --ct=new). */
export async function ovnTrace(sbSocket: string, dp: string, microflow: string, options: readonly string[] = []): Promise<string> {
  const { stdout } = await execFileAsync('ovn-trace', [`--db=unix:${sbSocket}`, '--minimal', ...options, dp, microflow], { timeout: 30_000 });
  return stdout;
}

/** How our agent's compiler and OVN's parser (the real ovn-trace) judged the flows of one view. */
export interface ParserComparison {
  /** Where they disagree, each with the flow's text. */
  readonly disagreements: readonly string[];
  /** Flows both refused. */
  readonly bothRefused: number;
}

/**
 * Our agent's compiler against OVN 23.03.1's own parser over one SB view (tests/helpers/
 * agent-compiles.ts on one side, the real ovn-trace over a real SB holding the view on the
 * other): every flow our agent refuses, ovn-trace refuses too (its match or its actions, which
 * is all its warning names); and every flow of a datapath our agent compiled whose match or
 * actions ovn-trace refuses, ours refuses too, except a match naming a port group (resolved per
 * datapath, which the warning does not name).
 */
export async function compareWithOvnParser(view: SbView): Promise<ParserComparison> {
  const dpName = [...(view.get('Datapath_Binding')?.values() ?? [])].map((r) => (r['external_ids'] as ReadonlyMap<string, string>).get('name')).find((n) => n !== undefined);
  if (dpName === undefined) return { disagreements: [], bothRefused: 0 };
  const ours = agentCompile(view);
  const copy = await startSbCopy(view);
  let real;
  try {
    real = await ovnTraceRefusals(copy.socketPath, dpName);
  } finally {
    await copy.stop();
  }
  const disagreements: string[] = [];
  let bothRefused = 0;
  const refusedHere = new Set<string>();
  for (const r of ours.refusals) {
    if (r.uuid === undefined) continue;
    refusedHere.add(r.uuid);
    if (real.matches.has(r.match) || real.actions.has(r.actions)) bothRefused++;
    else disagreements.push(`our agent refuses what OVN's parser takes: ${r.error} [${r.match} | ${r.actions}]`);
  }
  for (const [uuid, lf] of view.get('Logical_Flow') ?? []) {
    if (!ours.localFlows.has(uuid) || refusedHere.has(uuid)) continue;
    const match = lf['match'] as string;
    const actions = lf['actions'] as string;
    if ((real.matches.has(match) && !match.includes('@')) || real.actions.has(actions)) {
      disagreements.push(`OVN's parser refuses what our agent compiles: Logical_Flow ${uuid} [${match} | ${actions}]${real.actions.has(actions) ? ' (its actions)' : ' (its match)'}`);
    }
  }
  return { disagreements, bothRefused };
}
