// `ovnts check-cluster DIR...`: an offline cross-check of stopped members' Raft storage (as
// ovsdb-tool check-cluster does for OVSDB clusters). Each folder is opened as its member would
// be (checksums, torn tails, snapshot reassembly), then Raft's promises are checked across
// them: log matching (two logs with an entry of the same index and term agree on it and
// everything before), no two different committed entries at one index, and every member's
// commit index covered by its own durable log. Exit 0 when all hold, 1 with the findings.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { RaftStorage } from '../../cluster/storage.js';
import type { Entry, PersistedState } from '../../cluster/types.js';

interface Member {
  readonly dir: string;
  readonly state: PersistedState;
  readonly warnings: readonly string[];
  /** index -> entry, for the stored log after the snapshot. */
  readonly byIndex: ReadonlyMap<number, Entry>;
  readonly snapIndex: number;
  readonly lastIndex: number;
}

function sameEntry(a: Entry, b: Entry): boolean {
  if (a.term !== b.term || a.type !== b.type || a.data.byteLength !== b.data.byteLength) return false;
  for (let i = 0; i < a.data.byteLength; i++) if (a.data[i] !== b.data[i]) return false;
  return (a.client?.clientId ?? '') === (b.client?.clientId ?? '') && (a.client?.seq ?? 0) === (b.client?.seq ?? 0);
}

export interface CheckReport {
  readonly problems: string[];
  readonly lines: string[];
}

export async function checkCluster(dirs: readonly string[]): Promise<CheckReport> {
  const problems: string[] = [];
  const lines: string[] = [];
  const members: Member[] = [];
  for (const dir of dirs) {
    // Opening creates a store: a folder that is not there is a mistake to report, not a member.
    if (!existsSync(join(dir, 'CURRENT'))) {
      problems.push(`${dir}: no Raft storage here (not a member's data folder)`);
      continue;
    }
    let storage: RaftStorage;
    try {
      storage = await RaftStorage.open(dir);
    } catch (err) {
      problems.push(`${dir}: cannot be opened: ${(err as Error).message}`);
      continue;
    }
    const state = storage.load();
    await storage.close();
    const snapIndex = state.snapshot?.meta.index ?? 0;
    const byIndex = new Map(state.entries.map((e) => [e.index, e]));
    const lastIndex = snapIndex + state.entries.length;
    members.push({ dir, state, warnings: storage.warnings.map((w) => w.message), byIndex, snapIndex, lastIndex });
    lines.push(`${dir}: term ${state.hardState.term}, commit ${state.hardState.commit}, snapshot ${snapIndex}, log ${snapIndex + 1}..${lastIndex}${storage.warnings.length > 0 ? ` (recovery: ${storage.warnings.length} warnings)` : ''}`);
    if (state.hardState.commit > lastIndex) problems.push(`${dir}: commit ${state.hardState.commit} beyond its log (${lastIndex})`);
  }
  let compared = 0;
  for (let i = 0; i < members.length; i++) {
    for (let j = i + 1; j < members.length; j++) {
      const a = members[i] as Member;
      const b = members[j] as Member;
      // Log matching: find the highest index where both have an entry of the same term; all
      // entries up to it that both hold must be identical.
      const lo = Math.max(a.snapIndex, b.snapIndex) + 1;
      const hi = Math.min(a.lastIndex, b.lastIndex);
      let match = 0;
      for (let k = hi; k >= lo; k--) {
        if (a.byIndex.get(k)?.term === b.byIndex.get(k)?.term) {
          match = k;
          break;
        }
      }
      for (let k = lo; k <= match; k++) {
        compared++;
        if (!sameEntry(a.byIndex.get(k) as Entry, b.byIndex.get(k) as Entry)) {
          problems.push(`log matching broken at index ${k}: ${a.dir} and ${b.dir} hold different entries before a common (index, term) at ${match}`);
          break;
        }
      }
      // State machine safety: below both commit indexes, entries present in both must agree.
      const committed = Math.min(a.state.hardState.commit, b.state.hardState.commit, hi);
      for (let k = Math.max(lo, match + 1); k <= committed; k++) {
        const x = a.byIndex.get(k);
        const y = b.byIndex.get(k);
        if (x !== undefined && y !== undefined && !sameEntry(x, y)) {
          problems.push(`committed entries differ at index ${k} between ${a.dir} (term ${x.term}) and ${b.dir} (term ${y.term})`);
          break;
        }
      }
    }
  }
  lines.push(`${members.length} members read, ${compared} entry pairs compared`);
  return { problems, lines };
}

export function registerCheckClusterCommand(program: Command): void {
  program
    .command('check-cluster')
    .argument('<dirs...>', 'the data folders of stopped members (DATA_DIR/n1 ... of `ovnts up`)')
    .description('cross-check stopped members\' Raft logs: log matching, agreement of committed entries')
    .action(async (dirs: string[]) => {
      const r = await checkCluster(dirs);
      process.stdout.write(r.lines.join('\n') + '\n');
      if (r.problems.length > 0) {
        process.stdout.write(r.problems.map((p) => `PROBLEM: ${p}`).join('\n') + '\n');
        process.exitCode = 1;
      } else {
        process.stdout.write('ok: Raft\'s guarantees hold across these members\n');
      }
    });
}
