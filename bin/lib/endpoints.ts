// Where the cluster's members are: --endpoints, else $OVNTS_NB, else the NB_GRPC line of the
// env file `ovnts up` wrote in ./.ovnts; for agents, the same with $OVNTS_SB and SB_GRPC.
import { existsSync, readFileSync } from 'node:fs';

export class EndpointsError extends Error {}

function fromEnvFile(name: 'NB_GRPC' | 'SB_GRPC'): string | undefined {
  const path = '.ovnts/env';
  if (!existsSync(path)) return undefined;
  return new RegExp(`^${name}="?([^"\\n]*)"?$`, 'm').exec(readFileSync(path, 'utf8'))?.[1];
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
