// The TLS flags every ovnts command that speaks gRPC takes, spelled as OVN's daemons and tools
// spell theirs (ovsdb-server, ovn-nbctl, ovn-controller): -p/--private-key, -c/--certificate,
// -C/--ca-cert, all three or none. docs/tls.md says what is checked.
import { Option, type Command } from 'commander';
import { TlsCredentials, tlsFilesFrom, type TlsCredentialsOptions, type TlsFiles } from '../../cluster/tls.js';

/** The flags' values as commander gives them. */
export interface TlsFlagValues {
  readonly privateKey?: string;
  readonly certificate?: string;
  readonly caCert?: string;
}

/** The flags as a message names them. */
export const tlsFlagNames = { privateKey: '-p/--private-key', certificate: '-c/--certificate', caCert: '-C/--ca-cert' } as const;

/**
 * The three flags, each made by its own function so that a command's chain of options can
 * hold them together (`.addOption(tlsOption.privateKey(...))`). `whose` says whose identity
 * they give ("this member's", "the client's"), `more` what else the first says.
 */
export const tlsOption = {
  privateKey: (whose: string, more = ''): Option => new Option('-p, --private-key <file>', `${whose} private key (PEM); with -c and -C, gRPC goes over TLS${more}`),
  certificate: (whose: string): Option => new Option('-c, --certificate <file>', `${whose} certificate (PEM), signed by a CA the other side trusts`),
  caCert: (): Option => new Option('-C, --ca-cert <file>', 'the CA certificate (PEM) the other side\'s certificate must chain to; no host name is checked'),
} as const;

/** What a client's -p says of its defaults (bin/lib/endpoints.ts). */
export const clientTlsDefaults = ' (default: $OVNTS_PRIVATE_KEY, $OVNTS_CERTIFICATE and $OVNTS_CA_CERT, or those of ./.ovnts/env when the endpoints come from it)';

/** Adds the three flags to `command` (see tlsOption). */
export function addTlsFlags(command: Command, whose: string, more = ''): Command {
  return command.addOption(tlsOption.privateKey(whose, more)).addOption(tlsOption.certificate(whose)).addOption(tlsOption.caCert());
}

/** The files the flags give: undefined when none is given, a TlsError when only some are. */
export function tlsFilesOfFlags(o: TlsFlagValues): TlsFiles | undefined {
  return tlsFilesFrom(o, tlsFlagNames);
}

/** The identity the flags give, read and checked now (a TlsError names a file that is wrong). */
export function tlsOfFlags(o: TlsFlagValues, options?: TlsCredentialsOptions): TlsCredentials | undefined {
  const files = tlsFilesOfFlags(o);
  return files === undefined ? undefined : new TlsCredentials(files, options);
}
