// A member's TLS identity, as OVN's daemons take theirs: a private key, its certificate and the
// CA certificate that every peer's certificate must chain to (ovsdb-server's --private-key,
// --certificate and --ca-cert; ovn-nbctl's -p, -c and -C). Trust is the CA alone: like Open
// vSwitch's SSL streams, no host name is checked, so certificates made by ovs-pki (a common
// name, no subjectAltName) work for members reached at any address. Both sides present a
// certificate and both check the other's.
import { readFileSync, statSync } from 'node:fs';

export interface TlsFiles {
  readonly privateKey: string;
  readonly certificate: string;
  readonly caCert: string;
}

/** The three files' contents (PEM). */
export interface TlsIdentity {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca: Buffer;
}

/** The largest key, certificate or CA file read (a CA bundle of a few hundred certificates). */
export const TLS_FILE_BYTES_MAX = 1024 * 1024;

/**
 * The files given on a command line, all three or none: undefined when none is given, an error
 * naming the missing ones when only some are. `names` are the flags as the command spells them.
 */
export function tlsFilesFrom(
  given: { readonly privateKey?: string | undefined; readonly certificate?: string | undefined; readonly caCert?: string | undefined },
  names: { readonly privateKey: string; readonly certificate: string; readonly caCert: string } = { privateKey: '--private-key', certificate: '--certificate', caCert: '--ca-cert' },
): TlsFiles | undefined {
  const keys = ['privateKey', 'certificate', 'caCert'] as const;
  const missing = keys.filter((k) => given[k] === undefined || given[k] === '');
  if (missing.length === keys.length) return undefined;
  if (missing.length > 0) throw new Error(`${keys.map((k) => names[k]).join(', ')} go together: ${missing.map((k) => names[k]).join(' and ')} not given`);
  return { privateKey: given.privateKey as string, certificate: given.certificate as string, caCert: given.caCert as string };
}

function readPem(path: string, what: string): Buffer {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    throw new Error(`cannot read the ${what} ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (size > TLS_FILE_BYTES_MAX) throw new Error(`the ${what} ${path} is ${size} bytes, more than ${TLS_FILE_BYTES_MAX}`);
  const data = readFileSync(path);
  if (!data.includes('-----BEGIN ')) throw new Error(`the ${what} ${path} holds no PEM block`);
  return data;
}

/** Reads the three files; an error names the file and what is wrong with it. */
export function readTlsFiles(files: TlsFiles): TlsIdentity {
  return { key: readPem(files.privateKey, 'private key'), cert: readPem(files.certificate, 'certificate'), ca: readPem(files.caCert, 'CA certificate') };
}

/**
 * A stamp of the files' current versions (modification time and size of each): a server that
 * polls it reloads its identity when it changes, as ovsdb-server picks up a renewed certificate.
 * A file that cannot be read gives a stamp of its own, so its return is noticed too.
 */
export function tlsFilesStamp(files: TlsFiles): string {
  return [files.privateKey, files.certificate, files.caCert]
    .map((p) => {
      try {
        const s = statSync(p);
        return `${s.mtimeMs}/${s.size}`;
      } catch {
        return 'missing';
      }
    })
    .join(' ');
}

/** The check a client makes of the server's name: none (see the top of this file). */
export function acceptAnyServerName(): undefined {
  return undefined;
}
