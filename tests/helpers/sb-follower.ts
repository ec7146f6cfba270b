// A DesiredFlows fed a real ovsdb-server's SB as incremental steps: each `step()` reads the whole
// SB over its socket, gives the agent the rows that changed since the last read (the first read
// as a reset), and says whether there was anything. `fresh()` is a DesiredFlows built at once
// from the rows last read, for comparing the incremental engine with a recompute. Used by the
// tests that put our flow tables beside the real ovn-controller's.
import type { Test } from 'tap';
import { DesiredFlows } from '../../agent/flows/desired.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { LocalView } from '../../agent/local-view.js';
import { maxHashAlgIsSymL4 } from '../../agent/local/integration-bridge.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { startOvsSwitch, type OvsSwitch } from './ovs-switch.js';
import { readStoredSb } from './read-sb.js';

const keyed = (changes: readonly SbRowChange[]): Map<string, SbRowChange> => new Map(changes.map((c) => [`${c.table}\0${c.uuid}`, c]));

/** The rows that changed between two reads of the SB, as one incremental update's changes. */
function changesBetween(before: ReadonlyMap<string, SbRowChange>, after: ReadonlyMap<string, SbRowChange>): SbRowChange[] {
  const out: SbRowChange[] = [];
  for (const [k, c] of after) {
    const was = before.get(k)?.row;
    if (was === undefined || was._version !== c.row?._version) out.push(c);
  }
  for (const [k, c] of before) if (!after.has(k)) out.push({ table: c.table, uuid: c.uuid });
  return out;
}

export class SbFollower {
  readonly agent = new DesiredFlows();
  private held = new Map<string, SbRowChange>();
  private revision = 0;
  /** The view the agent was last given. */
  private applied: LocalView | undefined;

  constructor(private readonly sbSocket: string, private view: LocalView) {}

  /** The view the next step gives the agent (a new view alone is an update of its own). */
  setView(view: LocalView): void {
    this.view = view;
  }

  /** The view the agent is given. */
  get localView(): LocalView {
    return this.view;
  }

  /** The SB rows as last read. */
  rows(): IterableIterator<SbRowChange> {
    return this.held.values();
  }

  /** Reads the SB and applies what changed (and a view set since); true when the agent got an update. */
  async step(): Promise<boolean> {
    const now = keyed(await readStoredSb({ path: this.sbSocket }));
    const changes = changesBetween(this.held, now);
    this.held = now;
    if (changes.length === 0 && this.revision > 0) {
      if (this.applied === this.view) return false;
      this.agent.update(null, this.view);
      this.applied = this.view;
      return true;
    }
    this.revision++;
    this.agent.update({ reset: this.revision === 1, fromRevision: this.revision - 1, toRevision: this.revision, changes }, this.view);
    this.applied = this.view;
    return true;
  }

  /** A DesiredFlows computed at once from the rows last read, with the agent's conntrack zones. */
  fresh(): DesiredFlows {
    const scratch = new DesiredFlows({ ctZones: this.agent.ctZones() });
    scratch.update({ reset: true, fromRevision: 0, toRevision: 1, changes: [...this.held.values()] }, this.view);
    return scratch;
  }
}

/** A capability of the netdev datapath of `sw` (its Datapath record, which ovn-controller made); undefined without one. */
async function netdevCapability(sw: OvsSwitch, name: string): Promise<string | undefined> {
  const dp = (await sw.vsctl('--if-exists', 'get', 'Open_vSwitch', '.', 'datapaths:netdev')).trim();
  if (dp === '') return undefined;
  const value = (await sw.vsctl('--if-exists', 'get', 'Datapath', dp, `capabilities:${name}`)).trim().replace(/"/g, '');
  return value === '' ? undefined : value;
}

/**
 * Our side of a comparison with the real ovn-controller (chassis hv1 with `vms` on their
 * ofports, on switch `real`): an ovs-vswitchd of its own for our flows, our OpenFlow channel to
 * it, and an SbFollower of the real SB with hv1's view, whose datapath support (zero SNAT, the
 * symmetric L4 hash) is the real switch's (as our agent reads it from its own); `more` adds
 * tunnels, BFD sessions, localnet patch ports and VIF MTUs to the view. Stopped with the test.
 */
export async function oursBesideReal(
  t: Test, sbSocket: string, vms: readonly { readonly name: string; readonly ofport: number }[], real: OvsSwitch,
  more: Partial<Pick<LocalView, 'tunnels' | 'activeTunnels' | 'localnetPatches' | 'vifMtus'>> = {},
): Promise<{ sw: OvsSwitch; channel: OfChannel; follower: SbFollower }> {
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  const channel = await OfChannel.connect({ target: sw.mgmtTarget });
  t.teardown(() => channel.close());
  const view: LocalView = {
    chassis: 'hv1', vifs: new Map(vms.map((v) => [v.name, v.ofport])), tunnels: new Map(), localnetPatches: new Map(),
    ctZeroSnat: (await netdevCapability(real, 'ct_zero_snat')) === 'true',
    dpHashL4Sym: maxHashAlgIsSymL4(await netdevCapability(real, 'max_hash_alg')),
    ...more,
  };
  return { sw, channel, follower: new SbFollower(sbSocket, view) };
}

/** The cookies (a row's UUID's first 32 bits) of the Logical_Flow rows among `rows` that `keep` chooses. */
function lflowCookies(rows: Iterable<SbRowChange>, keep: (lf: sb.Logical_Flow) => boolean): Set<bigint> {
  const out = new Set<bigint>();
  for (const c of rows) {
    if (c.table !== 'Logical_Flow' || c.row === undefined) continue;
    const lf = c.row as unknown as sb.Logical_Flow;
    if (keep(lf)) out.add(BigInt(`0x${lf._uuid.slice(0, 8)}`));
  }
  return out;
}

/**
 * A bridge's flows that `keep` chooses (by cookie and table), as `ovs-ofctl dump-flows
 * --no-stats` prints them, each `group:N` replaced by group N as `dump-groups` prints it without
 * its id (ids are each controller's own), sorted: what two bridges are compared by.
 */
export async function dumpFlowsWithGroups(sw: OvsSwitch, keep: (cookie: bigint, table: number) => boolean): Promise<string[]> {
  const groups = new Map<string, string>();
  for (const line of (await sw.ofctl('dump-groups')).split('\n')) {
    const m = /group_id=(\d+),(.*)$/.exec(line.trim());
    if (m !== null) groups.set(m[1] as string, m[2] as string);
  }
  const out: string[] = [];
  for (const line of (await sw.ofctl('dump-flows', '--no-stats')).split('\n').map((l) => l.trim())) {
    const m = /^cookie=(0x[0-9a-f]+), (?:table=(\d+), )?/.exec(line);
    if (m === null || !keep(BigInt(m[1] as string), Number(m[2] ?? 0))) continue;
    out.push(line.replace(/group:(\d+)/g, (_, id: string) => `group:{${groups.get(id) ?? `? ${id}`}}`));
  }
  return out.sort();
}

/** What `converge` saw last: the real side's and our side's dumps, the updates applied, the time taken. */
export interface Converged {
  readonly real: string[];
  readonly ours: string[];
  readonly steps: number;
  readonly ms: number;
}

/**
 * Follows the SB (installing ours after each update the agent got) and dumps both sides until
 * the real one looks as `expect` says and ours equals it, or `maxMs` passed (the real
 * ovn-controller may still be applying the change); the caller then asserts on what it saw.
 */
export async function converge(
  follower: SbFollower, install: () => Promise<unknown>, dump: () => Promise<[string[], string[]]>, expect: (real: readonly string[]) => boolean, maxMs: number,
): Promise<Converged> {
  const started = Date.now();
  let steps = 0;
  for (;;) {
    if (await follower.step()) {
      steps++;
      await install();
    }
    const [real, ours] = await dump();
    if ((expect(real) && real.join('\n') === ours.join('\n')) || Date.now() > started + maxMs) return { real, ours, steps, ms: Date.now() - started };
    await new Promise((r) => setTimeout(r, 300));
  }
}

/**
 * `converge` over the flows of the Logical_Flow rows `keepRow` chooses (by cookie, chosen again
 * at each look, as rows come and go): ours installed into `ours` through `channel` with the
 * agent's groups, both bridges dumped with their groups expanded.
 */
export function convergeOnRows(
  follower: SbFollower, channel: OfChannel, real: OvsSwitch, ours: OvsSwitch, keepRow: (lf: sb.Logical_Flow) => boolean,
  expect: (real: readonly string[]) => boolean, maxMs: number,
): Promise<Converged> {
  const agent = follower.agent;
  const cookies = (): Set<bigint> => lflowCookies(follower.rows(), keepRow);
  return converge(follower,
    () => {
      const now = cookies();
      return channel.reconcile([...agent.table.flows()].map(([, f]) => f).filter((f) => now.has(f.cookie)), { groups: [...agent.groupSpecs().values()] });
    },
    () => {
      const now = cookies();
      const keep = (cookie: bigint): boolean => now.has(cookie);
      return Promise.all([dumpFlowsWithGroups(real, keep), dumpFlowsWithGroups(ours, keep)]);
    }, expect, maxMs);
}
