// Certificates for TLS tests, made the way OVN operators make theirs: with Open vSwitch's own
// ovs-pki (a CA per "switchca", certificates with a common name and no subjectAltName), from the
// openvswitch-common package CI installs. Each call makes a fresh CA in its own folder, so a
// test can make two and check that one's certificates are refused by the other's holders.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TlsFiles } from '../../cluster/tls.js';

export interface TestPki {
  /** The CA certificate every certificate made here chains to. */
  readonly caCert: string;
  /**
   * Makes (once) a key and a certificate signed by this CA for `name`, whose common name is
   * `name` exactly (ovs-pki -u, as OVN's RBAC tutorial makes a chassis's); the files as the
   * flags take them.
   */
  identity(name: string): TlsFiles;
}

/** A CA in `dir` (made if missing). */
export function makePki(dir: string): TestPki {
  mkdirSync(dir, { recursive: true });
  const pkiDir = join(dir, 'pki');
  const log = join(dir, 'ovs-pki.log');
  const pki = (...args: string[]): void => {
    execFileSync('ovs-pki', [`--dir=${pkiDir}`, `--log=${log}`, '--force', ...args], { cwd: dir, stdio: 'ignore', timeout: 30_000 });
  };
  pki('init');
  const caCert = join(pkiDir, 'switchca', 'cacert.pem');
  const made = new Map<string, TlsFiles>();
  return {
    caCert,
    identity(name: string): TlsFiles {
      if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`a certificate name of letters, digits, _ . - only: ${name}`);
      const have = made.get(name);
      if (have !== undefined) return have;
      pki('-u', 'req+sign', name, 'switch');
      const files = { privateKey: join(dir, `${name}-privkey.pem`), certificate: join(dir, `${name}-cert.pem`), caCert };
      made.set(name, files);
      return files;
    },
  };
}
