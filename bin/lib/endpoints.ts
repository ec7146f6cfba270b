// Where the cluster's members are: --endpoints, else $OVNTS_NB, else the NB_GRPC line of the
// env file `ovnts up` wrote in ./.ovnts.
import { existsSync, readFileSync } from 'node:fs';

export class EndpointsError extends Error {}

export function endpointsFrom(flag: string | undefined): string[] {
  const fromEnvFile = (): string | undefined => {
    const path = '.ovnts/env';
    if (!existsSync(path)) return undefined;
    return /^NB_GRPC="?([^"\n]*)"?$/m.exec(readFileSync(path, 'utf8'))?.[1];
  };
  const list = flag ?? process.env.OVNTS_NB ?? fromEnvFile();
  if (list === undefined || list === '') throw new EndpointsError('no endpoints: give --endpoints, set OVNTS_NB, or run `ovnts up` here');
  return list.split(',').map((s) => s.trim()).filter(Boolean);
}
