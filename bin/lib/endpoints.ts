// Where the cluster's members are and how to reach them. Endpoints: --endpoints, else $OVNTS_NB,
// else the NB_GRPC line of the env file `ovnts up` wrote in ./.ovnts; for agents, the same with
// $OVNTS_SB and SB_GRPC. TLS (bin/lib/tls-flags.ts): -p/-c/-C, else $OVNTS_PRIVATE_KEY,
// $OVNTS_CERTIFICATE and $OVNTS_CA_CERT, else, when the endpoints came from the env file, its
// lines of those names (`ovnts up` writes them for a cluster it started with TLS): the env file
// describes its own cluster, so its files are not offered to endpoints from elsewhere.
import { existsSync, readFileSync } from 'node:fs';
import { TlsCredentials, tlsFilesFrom, type TlsFiles } from '../../cluster/tls.js';
import { tlsFilesOfFlags, type TlsFlagValues } from './tls-flags.js';

export class EndpointsError extends Error {}

/** The env file `ovnts up` writes, relative to the working folder. */
const envFile = '.ovnts/env';

/** The environment variables (and env file lines) that name the TLS files. */
export const tlsEnvNames = { privateKey: 'OVNTS_PRIVATE_KEY', certificate: 'OVNTS_CERTIFICATE', caCert: 'OVNTS_CA_CERT' } as const;

function fromEnvFile(name: string): string | undefined {
  if (!existsSync(envFile)) return undefined;
  return new RegExp(`^${name}="?([^"\\n]*)"?$`, 'm').exec(readFileSync(envFile, 'utf8'))?.[1];
}

export function endpointsFrom(flag: string | undefined): string[] {
  const list = flag ?? process.env.OVNTS_NB ?? fromEnvFile('NB_GRPC');
  if (list === undefined || list === '') throw new EndpointsError('no endpoints: give --endpoints, set OVNTS_NB, or run `ovnts up` here');
  return list.split(',').map((s) => s.trim()).filter(Boolean);
}

/** The members' agent-stream (Southbound gRPC) addresses: the flag, $OVNTS_SB, or SB_GRPC. */
export function sbEndpointsFrom(flag: string | undefined): string[] {
  const list = flag ?? process.env.OVNTS_SB ?? fromEnvFile('SB_GRPC');
  if (list === undefined || list === '') throw new EndpointsError('no agent-stream endpoints: give them, set OVNTS_SB, or run `ovnts up` here');
  return list.split(',').map((s) => s.trim()).filter(Boolean);
}

/** The members' Northbound gRPC addresses and the identity to reach them with. */
export interface ClusterTarget {
  readonly endpoints: string[];
  /** Undefined: plaintext. */
  readonly tls: TlsCredentials | undefined;
}

function tlsFilesNamedBy(lookup: (name: string) => string | undefined, where: string): TlsFiles | undefined {
  const given = { privateKey: lookup(tlsEnvNames.privateKey), certificate: lookup(tlsEnvNames.certificate), caCert: lookup(tlsEnvNames.caCert) };
  const names = { privateKey: `${tlsEnvNames.privateKey}${where}`, certificate: `${tlsEnvNames.certificate}${where}`, caCert: `${tlsEnvNames.caCert}${where}` };
  return tlsFilesFrom(given, names);
}

/**
 * Where the cluster is, and with which identity to reach it (see the top of this file). The
 * files are read and checked now: a TlsError names the one that cannot be used.
 */
export function clusterFrom(flags: { readonly endpoints?: string | undefined } & TlsFlagValues): ClusterTarget {
  const fromFile = flags.endpoints === undefined && process.env.OVNTS_NB === undefined;
  const endpoints = endpointsFrom(flags.endpoints);
  const files =
    tlsFilesOfFlags(flags) ??
    tlsFilesNamedBy((name) => process.env[name], '') ??
    (fromFile ? tlsFilesNamedBy(fromEnvFile, ` in ${envFile}`) : undefined);
  return { endpoints, tls: files === undefined ? undefined : new TlsCredentials(files) };
}
