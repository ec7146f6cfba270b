// SSL for the OVSDB doors' pssl: listeners, as ovsdb-server does it: a private key, its
// certificate and a CA certificate, from the command line (--private-key, --certificate,
// --ca-cert) or, for a door that follows its database's remotes, from the database's SSL row
// (what `ovn-nbctl set-ssl` / `ovn-sbctl set-ssl` write; ovn-ctl runs ovsdb-server with
// --private-key=db:OVN_Northbound,SSL,private_key and the like). Clients must present a
// certificate that chains to the CA, as Open vSwitch's SSL streams require; no host name is
// checked. ssl_protocols and ssl_ciphers follow ovsdb-server's --ssl-protocols and --ssl-ciphers.
//
// ovsdb-server notices a renewed key or certificate file and serves with it from then on; so
// does this: the owner polls (refresh) and hands a changed context to its listeners.
import tls from 'node:tls';
import { readTlsFiles, tlsFilesStamp, tlsLimits, type TlsFiles } from '../cluster/tls.js';
import type { Row } from '../ovsdb/index.js';
import type { ReadableDb } from './ovsdb-monitor.js';

/** How often a door with pssl: listeners looks at its files for a renewed key or certificate (as the gRPC endpoints do). */
export const SSL_FILES_POLL_MS = tlsLimits.reloadIntervalMs;

export interface OvsdbSslSettings {
  readonly files: TlsFiles;
  /** ovsdb-server's --ssl-protocols: TLSv1, TLSv1.1, TLSv1.2 (and TLSv1.3), comma- or space-separated. */
  readonly protocols?: string | undefined;
  /** ovsdb-server's --ssl-ciphers: an OpenSSL cipher list. */
  readonly ciphers?: string | undefined;
}

/** What a pssl: listener is made with, or why it cannot be. */
export type SslContext = { readonly options: tls.TlsOptions } | { readonly error: string };

const TLS_VERSIONS: readonly tls.SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/**
 * The TLS versions a protocols setting allows, as Node takes them (a range): from the lowest
 * named to TLS 1.3. Open vSwitch 3.1 turns on the versions named among TLSv1, TLSv1.1 and TLSv1.2
 * (case-insensitive; separated by blanks or commas) and never turns TLS 1.3 off, so a range up to
 * 1.3 allows what it allows; a gap in the list (TLSv1 and TLSv1.2 without TLSv1.1) is closed.
 * An unknown name is an error, as there.
 */
export function tlsVersionRange(protocols: string): { minVersion: tls.SecureVersion; maxVersion: tls.SecureVersion } | string {
  const words = protocols.split(/[\s,]+/).filter((w) => w !== '');
  if (words.length === 0) return 'SSL protocol settings invalid: no protocol named';
  let min = TLS_VERSIONS.length - 1;
  for (const w of words) {
    const i = TLS_VERSIONS.findIndex((v) => v.toLowerCase() === w.toLowerCase());
    if (i < 0) return `${w}: SSL protocol not recognized (expected TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3)`;
    min = Math.min(min, i);
  }
  return { minVersion: TLS_VERSIONS[min] as tls.SecureVersion, maxVersion: 'TLSv1.3' };
}

/** The server options of a pssl: listener made with these settings, or why not (a file, a setting). */
export function sslContext(s: OvsdbSslSettings): SslContext {
  let id;
  try {
    id = readTlsFiles(s.files);
  } catch (err) {
    return { error: (err as Error).message };
  }
  const options: tls.TlsOptions = {
    key: id.key,
    cert: id.cert,
    ca: id.ca,
    requestCert: true,
    rejectUnauthorized: true,
  };
  if (s.protocols !== undefined && s.protocols !== '') {
    const range = tlsVersionRange(s.protocols);
    if (typeof range === 'string') return { error: range };
    options.minVersion = range.minVersion;
    options.maxVersion = range.maxVersion;
  }
  if (s.ciphers !== undefined && s.ciphers !== '') options.ciphers = s.ciphers;
  // Made once here so that what OpenSSL refuses (a key that is not the certificate's, a cipher
  // list naming nothing) is an error of the settings, not of a listener's start or swap.
  try {
    tls.createSecureContext(options);
  } catch (err) {
    return { error: `the SSL settings do not make a TLS context (${s.files.privateKey}, ${s.files.certificate}, ${s.files.caCert}): ${(err as Error).message}` };
  }
  return { options };
}

/**
 * The settings of the database's SSL row (the one its global row's `ssl` names; SSL is not a
 * root table, so a row exists only while named), or undefined when there is none or it leaves a
 * file unnamed.
 */
export function sslRowSettings(db: ReadableDb): OvsdbSslSettings | undefined {
  const rows = [...db.rows('SSL').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : a._uuid > b._uuid ? 1 : 0));
  const row = rows[0] as (Row & { private_key?: unknown; certificate?: unknown; ca_cert?: unknown; ssl_protocols?: unknown; ssl_ciphers?: unknown }) | undefined;
  if (row === undefined) return undefined;
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  const files = { privateKey: text(row.private_key), certificate: text(row.certificate), caCert: text(row.ca_cert) };
  if (files.privateKey === '' || files.certificate === '' || files.caCert === '') return undefined;
  return { files, protocols: text(row.ssl_protocols), ciphers: text(row.ssl_ciphers) };
}

/**
 * A door's SSL: settings from the command line, else (when the door follows its database) from
 * the SSL row. `refresh` reads the settings and the files' stamps again and says whether the
 * context changed, so the owner hands the new one to its listeners.
 */
export class DoorSsl {
  /** The settings and file stamps the context was made from (undefined before the first refresh). */
  private key: string | undefined;
  private context: SslContext = { error: 'no SSL settings' };

  constructor(
    private readonly fromFlags: OvsdbSslSettings | undefined,
    private readonly fromRow: (() => OvsdbSslSettings | undefined) | undefined,
  ) {
    this.refresh();
  }

  /** The settings in force: the command line's, else the row's. */
  settings(): OvsdbSslSettings | undefined {
    return this.fromFlags ?? this.fromRow?.();
  }

  current(): SslContext {
    return this.context;
  }

  /** Reads the settings and the files again; true when the context changed. */
  refresh(): boolean {
    const s = this.settings();
    const key = s === undefined ? '' : JSON.stringify([s.files, s.protocols ?? '', s.ciphers ?? '', tlsFilesStamp(s.files)]);
    if (key === this.key) return false;
    this.key = key;
    this.context =
      s === undefined
        ? { error: `pssl: needs a private key, a certificate and a CA certificate: --private-key, --certificate and --ca-cert${this.fromRow === undefined ? '' : ', or the database\'s SSL row (set-ssl)'}` }
        : sslContext(s);
    return true;
  }
}
