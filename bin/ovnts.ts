#!/usr/bin/env node
// The `ovnts` command: one entry point, one subcommand per process or tool. Each subcommand
// lives in bin/commands/ and registers itself on the program here; this file only assembles.
import { Command } from 'commander';

/**
 * Each module of bin/commands/, the subcommands it registers, and how to load it. A process
 * loads only the module of the subcommand it runs: a central member used to load the agent's
 * modules too (its flow compiler, OpenFlow), ~2.6 MiB of heap it never used.
 */
const commandModules: readonly { readonly names: readonly string[]; readonly load: () => Promise<(program: Command) => void> }[] = [
  { names: ['schema'], load: async () => (await import('./commands/schema.js')).registerSchemaCommand },
  { names: ['db'], load: async () => (await import('./commands/db.js')).registerDbCommand },
  { names: ['central'], load: async () => (await import('./commands/central.js')).registerCentralCommand },
  { names: ['up', 'down'], load: async () => (await import('./commands/cluster-up.js')).registerUpCommands },
  { names: ['nbctl'], load: async () => (await import('./commands/nbctl.js')).registerNbctlCommand },
  { names: ['agent'], load: async () => (await import('./commands/agent.js')).registerAgentCommand },
  { names: ['cluster'], load: async () => (await import('./commands/cluster.js')).registerClusterCommand },
  { names: ['snapshot'], load: async () => (await import('./commands/snapshot.js')).registerSnapshotCommand },
  { names: ['check-cluster'], load: async () => (await import('./commands/check-cluster.js')).registerCheckClusterCommand },
  { names: ['raft-kv'], load: async () => (await import('./commands/raft-kv.js')).registerRaftKvCommand },
];

/**
 * The program with the subcommand `argv` names, or with every subcommand when it names none
 * of them (no subcommand, --help, a typo: commander then lists them all).
 */
export async function buildProgram(argv: readonly string[]): Promise<Command> {
  const program = new Command();
  program
    .name('ovnts')
    .description('The OVN control plane as an event-sourced, Raft-replicated central database')
    .showHelpAfterError()
    .exitOverride();
  const named = commandModules.find((m) => m.names.includes(argv[2] ?? ''));
  for (const m of named === undefined ? commandModules : [named]) (await m.load())(program);
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  const program = await buildProgram(argv);
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

process.exitCode = await main(process.argv);
