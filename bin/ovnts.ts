#!/usr/bin/env node
// The `ovnts` command: one entry point, one subcommand per process or tool. Each subcommand
// lives in bin/commands/ and registers itself on the program here; this file only assembles.
import { Command } from 'commander';
import { registerAgentCommand } from './commands/agent.js';
import { registerCentralCommand } from './commands/central.js';
import { registerClusterCommand } from './commands/cluster.js';
import { registerCheckClusterCommand } from './commands/check-cluster.js';
import { registerSnapshotCommand } from './commands/snapshot.js';
import { registerUpCommands } from './commands/cluster-up.js';
import { registerDbCommand } from './commands/db.js';
import { registerNbctlCommand } from './commands/nbctl.js';
import { registerRaftKvCommand } from './commands/raft-kv.js';
import { registerSchemaCommand } from './commands/schema.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('ovnts')
    .description('The OVN control plane as an event-sourced, Raft-replicated central database')
    .showHelpAfterError()
    .exitOverride();
  registerSchemaCommand(program);
  registerDbCommand(program);
  registerCentralCommand(program);
  registerUpCommands(program);
  registerNbctlCommand(program);
  registerAgentCommand(program);
  registerClusterCommand(program);
  registerSnapshotCommand(program);
  registerCheckClusterCommand(program);
  registerRaftKvCommand(program);
  return program;
}

async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
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
