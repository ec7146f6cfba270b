// `ovnts sbctl engine-stats`: the Southbound side's operations view. The SB view is derived on
// every member by the northd engine; engine-stats shows, per member and projection node, how
// many runs recomputed the node and how many followed their inputs' changes incrementally
// (the common NB changes should only ever add to the second column).
import type { Command } from 'commander';
import type { EngineStatsJson } from '../../server/admin-service.js';
import { clusterFrom } from '../lib/endpoints.js';
import type { MemberAnswer } from '../lib/members.js';
import { askEveryMember } from '../lib/members.js';
import { addTlsFlags, clientTlsDefaults, type TlsFlagValues } from '../lib/tls-flags.js';

interface Common extends TlsFlagValues {
  endpoints?: string;
  format: string;
}

type MemberStats = MemberAnswer<'stats', EngineStatsJson>;

function formatStats(all: readonly MemberStats[]): string {
  const out: string[] = [];
  for (const m of all) {
    if ('error' in m) {
      out.push(`member ? (${m.address}): unreachable: ${m.error}\n`);
      continue;
    }
    const rows = [['node', 'recomputes', 'incremental'], ...m.stats.nodes.map((n) => [n.name, String(n.recomputes), String(n.incrementalRuns)])];
    const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => (r[i] as string).length)));
    const text = rows.map((r) => `  ${(r[0] as string).padEnd(widths[0] as number)}  ${(r[1] as string).padStart(widths[1] as number)}  ${(r[2] as string).padStart(widths[2] as number)}`).join('\n');
    out.push(`member ${m.stats.id} (${m.address}) at revision ${m.stats.revision}:\n${m.stats.nodes.length === 0 ? '  no projection on this member' : text}\n`);
  }
  return out.join('\n');
}

export function registerSbctlCommand(program: Command): void {
  const sbctl = program.command('sbctl').description('the derived Southbound view: its engine\'s counters');
  addTlsFlags(sbctl.command('engine-stats'), 'the client\'s', clientTlsDefaults)
    .description('per member and northd engine node: the runs that recomputed it and the incremental ones')
    .option('--endpoints <list>', 'members\' gRPC addresses, comma-separated (default: $OVNTS_NB or ./.ovnts/env)')
    .option('--format <f>', 'table or json', 'table')
    .action(async (o: Common) => {
      const all = await askEveryMember(clusterFrom(o), 'stats', (c) => c.engineStats());
      process.stdout.write(o.format === 'json' ? JSON.stringify(all, null, 2) + '\n' : formatStats(all));
      if (all.every((m) => 'error' in m)) process.exitCode = 1;
    });
}
