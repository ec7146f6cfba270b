// `ovnts nbctl`: ovn-nbctl's commands against an ovnts cluster's Northbound API (the
// commands themselves are in bin/lib/nbctl/). Endpoints come from --endpoints, else
// $OVNTS_NB, else ./.ovnts/env (written by `ovnts up`); a member that does not answer is
// skipped for the next. ovn-nbctl's -p/-c/-C (before the command) give the TLS identity,
// with the same defaults as the endpoints' (bin/lib/endpoints.ts).
import type { Command } from 'commander';
import { NorthboundClient } from '../../server/northbound-service.js';
import { TlsError } from '../../cluster/tls.js';
import { localOutput, nbctlCommandNames, runNbctl, tlsFlagsOf } from '../lib/nbctl/commands.js';
import { EndpointsError, clusterFrom } from '../lib/endpoints.js';
import { Nb, NbctlError } from '../lib/nbctl/nb.js';

export function registerNbctlCommand(program: Command): void {
  program
    .command('nbctl')
    .description(`ovn-nbctl's commands against an ovnts cluster: ${nbctlCommandNames.join(', ')}`)
    .option('--endpoints <list>', 'Northbound gRPC addresses, comma-separated (default: $OVNTS_NB or ./.ovnts/env)')
    .argument('<words...>', 'an ovn-nbctl command and its arguments, with flags such as --may-exist or --if-exists; several commands separated by "--" run in one transaction; before the first, ovn-nbctl\'s options, among them -p/--private-key, -c/--certificate and -C/--ca-cert for TLS (default: $OVNTS_PRIVATE_KEY, $OVNTS_CERTIFICATE, $OVNTS_CA_CERT, or those of ./.ovnts/env when the endpoints come from it)')
    .allowUnknownOption(true)
    // From the ovn-nbctl command on, every word is the command line's, each "--" included: it
    // separates the commands of one transaction.
    .passThroughOptions()
    .action(async (words: string[], o: { endpoints?: string }) => {
      try {
        const local = localOutput(words);
        if (local !== undefined) {
          process.stdout.write(local);
          return;
        }
        const target = clusterFrom({ endpoints: o.endpoints, ...tlsFlagsOf(words) });
        const nb = new Nb(target.endpoints.map((e) => new NorthboundClient(e, 10_000, target.tls)));
        try {
          process.stdout.write(await runNbctl(nb, words));
        } finally {
          nb.close();
        }
      } catch (err) {
        if (!(err instanceof NbctlError) && !(err instanceof EndpointsError) && !(err instanceof TlsError)) throw err;
        process.stderr.write(`ovnts nbctl: ${err.message}\n`);
        process.exitCode = 1;
      }
    });
}
