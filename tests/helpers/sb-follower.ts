// A DesiredFlows fed a real ovsdb-server's SB as incremental steps: each `step()` reads the whole
// SB over its socket, gives the agent the rows that changed since the last read (the first read
// as a reset), and says whether there was anything. `fresh()` is a DesiredFlows built at once
// from the rows last read, for comparing the incremental engine with a recompute. Used by the
// tests that put our flow tables beside the real ovn-controller's.
import type { Test } from 'tap';
import { DesiredFlows } from '../../agent/flows/desired.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbRowChange } from '../../agent/sb-source.js';
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

/** Whether the netdev datapath of `sw` commits with an all-zero SNAT (its Datapath record, which ovn-controller made). */
async function ctZeroSnatOf(sw: OvsSwitch): Promise<boolean> {
  const dp = (await sw.vsctl('--if-exists', 'get', 'Open_vSwitch', '.', 'datapaths:netdev')).trim();
  if (dp === '') return false;
  return (await sw.vsctl('--if-exists', 'get', 'Datapath', dp, 'capabilities:ct_zero_snat')).trim().replace(/"/g, '') === 'true';
}

/**
 * Our side of a comparison with the real ovn-controller (chassis hv1 with `vms` on their
 * ofports, on switch `real`): an ovs-vswitchd of its own for our flows, our OpenFlow channel to
 * it, and an SbFollower of the real SB with hv1's view, whose datapath support is the real
 * switch's (as our agent reads it from its own); `more` adds tunnels, BFD sessions, localnet
 * patch ports and VIF MTUs to the view. Stopped with the test.
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
    chassis: 'hv1', vifs: new Map(vms.map((v) => [v.name, v.ofport])), tunnels: new Map(), localnetPatches: new Map(), ctZeroSnat: await ctZeroSnatOf(real), ...more,
  };
  return { sw, channel, follower: new SbFollower(sbSocket, view) };
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
