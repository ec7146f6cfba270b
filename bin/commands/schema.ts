// `ovnts schema nb|sb`: print one of our OVSDB schemas in the RFC 7047 schema format.
import type { Command } from 'commander';

export function registerSchemaCommand(program: Command): void {
  program
    .command('schema')
    .description('print the OVN_Northbound (nb) or OVN_Southbound (sb) schema as OVSDB JSON')
    .argument('<db>', 'nb or sb')
    .action(async (db: string) => {
      const { schemaJsonFor } = await import('../../ovsdb/schemas/index.js');
      const json = schemaJsonFor(db);
      process.stdout.write(JSON.stringify(json, null, 2) + '\n');
    });
}
