// A member's TLS identity, as OVN's daemons take theirs: a private key, its certificate and the
// CA certificate that every peer's certificate must chain to (ovsdb-server's --private-key,
// --certificate and --ca-cert; ovn-nbctl's -p, -c and -C). Trust is the CA alone: like Open
// vSwitch's SSL streams, no host name is checked, so certificates made by ovs-pki (a common
// name, no subjectAltName) work for members reached at any address. Both sides present a
// certificate and both check the other's.
//
// TlsCredentials is the one place where files become gRPC credentials: every listener and every
// channel of a member, an agent or a command takes its credentials from one. It keeps watching
// the files, so that a renewed certificate is used without a restart (see TlsCredentials).
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import type * as tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';

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

/** Why an identity cannot be used; the message names the file and what is wrong with it. */
export class TlsError extends Error {}

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
  if (missing.length > 0) throw new TlsError(`${keys.map((k) => names[k]).join(', ')} go together: ${missing.map((k) => names[k]).join(' and ')} not given`);
  return { privateKey: given.privateKey as string, certificate: given.certificate as string, caCert: given.caCert as string };
}

function readPem(path: string, what: string): Buffer {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    throw new TlsError(`cannot read the ${what} ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (size > TLS_FILE_BYTES_MAX) throw new TlsError(`the ${what} ${path} is ${size} bytes, more than ${TLS_FILE_BYTES_MAX}`);
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    throw new TlsError(`cannot read the ${what} ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (!data.includes('-----BEGIN ')) throw new TlsError(`the ${what} ${path} holds no PEM block`);
  return data;
}

/** Reads the three files; an error names the file and what is wrong with it. */
export function readTlsFiles(files: TlsFiles): TlsIdentity {
  return { key: readPem(files.privateKey, 'private key'), cert: readPem(files.certificate, 'certificate'), ca: readPem(files.caCert, 'CA certificate') };
}

function parsed<T>(what: string, path: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new TlsError(`the ${what} ${path} cannot be used: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Reads the three files and checks that they make an identity: the certificate and the CA
 * certificate parse, and the private key is the certificate's. Without the check, a key that
 * does not match its certificate (a renewal half done, a wrong path) surfaced only as every
 * handshake failing, on the other side. Whether the certificate chains to the CA is not
 * checked here: what counts is that it chains to the CA of whoever checks it.
 */
export function loadTlsIdentity(files: TlsFiles): TlsIdentity {
  const id = readTlsFiles(files);
  const cert = parsed('certificate', files.certificate, () => new X509Certificate(id.cert));
  parsed('CA certificate', files.caCert, () => new X509Certificate(id.ca));
  const key = parsed('private key', files.privateKey, () => createPrivateKey(id.key));
  if (!cert.checkPrivateKey(key)) throw new TlsError(`the private key ${files.privateKey} does not match the certificate ${files.certificate}`);
  return id;
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

/**
 * The first common name of a peer certificate's subject (as ovsdb-server reads a client's id
 * for RBAC), or undefined for none: no certificate, or none in its subject.
 */
export function peerCommonName(cert: tls.PeerCertificate | undefined): string | undefined {
  const cn = (cert?.subject as Record<string, string | string[] | undefined> | undefined)?.CN;
  const first = Array.isArray(cn) ? cn[0] : cn;
  return typeof first === 'string' ? first : undefined;
}

/** What became of a change of the files after the start. */
export type TlsReloadEvent =
  | { readonly kind: 'reloaded'; readonly files: TlsFiles }
  | { readonly kind: 'refused'; readonly reason: string };

export interface TlsCredentialsOptions {
  /** How often the files' stamp is looked at while a listener or channel uses them. */
  readonly reloadIntervalMs?: number;
  /** Hears of each change of the files: taken, or refused (the identity before it stays). */
  readonly onReload?: (e: TlsReloadEvent) => void;
}

export const tlsLimits = {
  /** A renewed certificate is in use within this long (ovsdb-server looks at every wakeup). */
  reloadIntervalMs: 2_000,
} as const;

type CaListener = grpc.experimental.CaCertificateUpdateListener;
type IdentityListener = grpc.experimental.IdentityCertificateUpdateListener;

/**
 * A TLS identity read from its files, and the gRPC credentials made from it. It is gRPC's
 * certificate provider for them: every listener and channel it made asks it for the CA and the
 * key pair, and it tells them of a new one when the files change. While any of them is open it
 * looks at the files' stamp every reloadIntervalMs; a change is read and checked whole
 * (loadTlsIdentity) before it is taken, so a renewal caught half written (the key replaced, the
 * certificate not yet) is refused, reported, and the identity before it stays until the files
 * agree again. gRPC's own file watcher would hand the half-written pair to the listener, which
 * then drops every connection until the next read. A change applies to new connections; the
 * ones open keep the identity they were made with, as OVS's SSL streams do.
 */
export class TlsCredentials implements grpc.experimental.CertificateProvider {
  private current: TlsIdentity;
  private stamp: string;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private timer: NodeJS.Timeout | undefined;
  private server: grpc.ServerCredentials | undefined;
  private channel: grpc.ChannelCredentials | undefined;

  /** Reads and checks the files now; a TlsError names the one that cannot be used and why. */
  constructor(
    private paths: TlsFiles,
    private readonly options: TlsCredentialsOptions = {},
  ) {
    // The stamp first: a change made while the files are read is then seen by the next look.
    this.stamp = tlsFilesStamp(paths);
    this.current = loadTlsIdentity(paths);
  }

  /** The files the identity is read from. */
  get files(): TlsFiles {
    return this.paths;
  }

  /**
   * Reads the identity from other files from now on (an agent's SSL row set to new paths), as a
   * renewal: taken if they read and check, and every listener and channel told; refused and
   * reported otherwise, the identity in use staying (and the new paths watched, so that they
   * are taken once they can be). True when a new identity was taken.
   */
  useFiles(files: TlsFiles): boolean {
    if (files.privateKey === this.paths.privateKey && files.certificate === this.paths.certificate && files.caCert === this.paths.caCert) return false;
    this.paths = files;
    this.stamp = '';
    return this.reloadIfChanged();
  }

  /** The identity in use now. */
  identity(): TlsIdentity {
    return this.current;
  }

  /** For a listener: TLS only, and a client certificate that chains to the CA is required. */
  serverCredentials(): grpc.ServerCredentials {
    // This one provider stands for both the CA and the key pair, as gRPC asks for each apart.
    this.server ??= grpc.experimental.createCertificateProviderServerCredentials(this, this, true);
    return this.server;
  }

  /** For a channel: this identity shown to the server, whose certificate must chain to the CA. */
  channelCredentials(): grpc.ChannelCredentials {
    this.channel ??= grpc.experimental.createCertificateProviderChannelCredentials(this, this, { checkServerIdentity: acceptAnyServerName });
    return this.channel;
  }

  /**
   * Looks at the files now (the timer does every reloadIntervalMs): when their stamp changed and
   * they read and check, their identity is taken and every listener and channel told. True
   * when a new identity was taken.
   */
  reloadIfChanged(): boolean {
    const stamp = tlsFilesStamp(this.files);
    if (stamp === this.stamp) return false;
    this.stamp = stamp;
    let next: TlsIdentity;
    try {
      next = loadTlsIdentity(this.files);
    } catch (err) {
      if (!(err instanceof TlsError)) throw err;
      this.options.onReload?.({ kind: 'refused', reason: err.message });
      return false;
    }
    if (next.key.equals(this.current.key) && next.cert.equals(this.current.cert) && next.ca.equals(this.current.ca)) return false;
    this.current = next;
    for (const listener of [...this.caListeners]) listener({ caCertificate: next.ca });
    for (const listener of [...this.identityListeners]) listener({ certificate: next.cert, privateKey: next.key });
    this.options.onReload?.({ kind: 'reloaded', files: this.files });
    return true;
  }

  // gRPC's side (grpc.experimental.CertificateProvider). A listener hears the identity in use
  // on a later tick, never from inside add: gRPC's server credentials add their own watcher
  // only after asking for the CA and key pair, and an answer given at once would not reach it.

  addCaCertificateListener(listener: CaListener): void {
    this.watch();
    this.caListeners.add(listener);
    process.nextTick(() => {
      if (this.caListeners.has(listener)) listener({ caCertificate: this.current.ca });
    });
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
    this.unwatchWhenUnused();
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.watch();
    this.identityListeners.add(listener);
    process.nextTick(() => {
      if (this.identityListeners.has(listener)) listener({ certificate: this.current.cert, privateKey: this.current.key });
    });
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
    this.unwatchWhenUnused();
  }

  private watch(): void {
    if (this.timer !== undefined) return;
    // Nothing looked at the files while nothing used them (a command's channel closed and the
    // next one opens): look now, so that the new one starts from the files as they are.
    this.reloadIfChanged();
    // Unref'd: the files being watched never keeps a process alive on its own.
    this.timer = setInterval(() => this.reloadIfChanged(), this.options.reloadIntervalMs ?? tlsLimits.reloadIntervalMs);
    this.timer.unref();
  }

  private unwatchWhenUnused(): void {
    if (this.caListeners.size > 0 || this.identityListeners.size > 0 || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** A listener's credentials: mutual TLS with `tls`, plaintext without (as before TLS). */
export function serverCredentials(tls: TlsCredentials | undefined): grpc.ServerCredentials {
  return tls === undefined ? grpc.ServerCredentials.createInsecure() : tls.serverCredentials();
}

/** A channel's credentials: TLS with `tls`'s identity, plaintext without (as before TLS). */
export function channelCredentials(tls: TlsCredentials | undefined): grpc.ChannelCredentials {
  return tls === undefined ? grpc.credentials.createInsecure() : tls.channelCredentials();
}

/** The server name a channel sends (SNI) to a member reached by IP address; see tlsChannelOptions. */
export const TLS_SERVER_NAME_FOR_IP = 'ovnts';

/**
 * Channel options that go with channelCredentials(tls) for a channel to `address` (host:port).
 * gRPC sends the address's host as the TLS server name, which for an IP address RFC 6066
 * forbids and Node warns of on stderr, once per process: every command run against members
 * reached by IP would print it. No name is checked here (see the top of this file), so a fixed
 * name goes instead. A host name is sent as it is.
 */
export function tlsChannelOptions(tls: TlsCredentials | undefined, address: string): grpc.ChannelOptions {
  if (tls === undefined) return {};
  const host = /^\[?([^\]]*)\]?:\d+$/.exec(address)?.[1] ?? address;
  return isIP(host) === 0 ? {} : { 'grpc.ssl_target_name_override': TLS_SERVER_NAME_FOR_IP };
}
