#!/usr/bin/env node
// The `ovnts` command: one entry point, one subcommand per process or tool. Each subcommand
// lives in bin/commands/ and registers itself on the program here; this file only assembles.
import { Command } from 'commander';

type Register = (program: Command) => void;

/**
 * Each subcommand's module, loaded only when it runs: a command imports what it needs (the
 * central node pulls in Raft, northd and every service), and `ovnts nbctl` run once per
 * command in a script should not pay to load all of that (it took ~0.4 s, most of it
 * importing modules it never used), nor a central member hold the agent's flow compiler and
 * OpenFlow code (~2.6 MiB of heap). Help without a subcommand loads them all.
 */
const subcommands: readonly { readonly names: readonly string[]; readonly load: () => Promise<Register> }[] = [
  { names: ['schema'], load: async () => (await import('./commands/schema.js')).registerSchemaCommand },
  { names: ['db'], load: async () => (await import('./commands/db.js')).registerDbCommand },
  { names: ['central'], load: async () => (await import('./commands/central.js')).registerCentralCommand },
  { names: ['up', 'down'], load: async () => (await import('./commands/cluster-up.js')).registerUpCommands },
  { names: ['nbctl'], load: async () => (await import('./commands/nbctl.js')).registerNbctlCommand },
  { names: ['sbctl'], load: async () => (await import('./commands/sbctl.js')).registerSbctlCommand },
  { names: ['agent'], load: async () => (await import('./commands/agent.js')).registerAgentCommand },
  { names: ['cluster'], load: async () => (await import('./commands/cluster.js')).registerClusterCommand },
  { names: ['snapshot'], load: async () => (await import('./commands/snapshot.js')).registerSnapshotCommand },
  { names: ['check-cluster'], load: async () => (await import('./commands/check-cluster.js')).registerCheckClusterCommand },
  { names: ['raft-kv'], load: async () => (await import('./commands/raft-kv.js')).registerRaftKvCommand },
];

/** The program with the subcommand `name` (every subcommand when undefined or unknown). */
export async function buildProgram(name?: string): Promise<Command> {
  const program = new Command();
  program
    .name('ovnts')
    .description('The OVN control plane as an event-sourced, Raft-replicated central database')
    .showHelpAfterError()
    // Options of the program come before the subcommand, so that a subcommand may take every
    // word after its first argument as it is (nbctl's "CMD -- CMD").
    .enablePositionalOptions()
    .exitOverride();
  const one = subcommands.find((s) => name !== undefined && s.names.includes(name));
  for (const s of one === undefined ? subcommands : [one]) (await s.load())(program);
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  const program = await buildProgram(argv[2]);
  try {
    await program.parseAsync(argv as string[]);
    // A subcommand may report failure (e.g. a failed transaction) through process.exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    // commander throws for --help/--version (code 0) and usage errors (code 1) because of
    // exitOverride(); everything else is a real failure and is reported as such.
    const code = (err as { exitCode?: unknown }).exitCode;
    if (typeof code === 'number') return code;
    process.stderr.write(`ovnts: ${(err as Error).message}\n`);
    return 1;
  }
}

// A reader that goes away (`ovnts up | head -1`) closes stdout under us: what it no longer
// reads is dropped, and the command still finishes its work (a half-started cluster, a
// transaction sent but not waited for, would be worse than lost output).
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

process.exitCode = await main(process.argv);
