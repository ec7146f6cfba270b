// A grpc.Server served on a listener of our own, through grpc-js's public connection injector:
// grpc-js has no limit on connections, and every connection holds a file descriptor until
// HTTP/2 gives up on it, even one that never speaks. Here a connection past `connectionsMax` is
// closed as soon as it is accepted, and counted. With a TLS identity every connection must
// complete a TLS handshake and show a client certificate that chains to the identity's CA;
// one that does not is closed by the handshake, before gRPC sees a byte of it.
import net from 'node:net';
import type grpc from '@grpc/grpc-js';
import { capConnections } from './connection-cap.js';
import { serverCredentials, type TlsCredentials } from './tls.js';

export interface GrpcListener {
  readonly port: number;
  close(): void;
}

/**
 * Serves `server` on `address` ("host:port", port 0 for any) through a listener of our own that
 * holds at most `connectionsMax` connections; Node closes one past it as soon as it is accepted,
 * and `onRefused` hears of it. Connections get TCP_NODELAY, as the OVSDB doors' do: a reply is
 * one small write. `server` needs no bindAsync. With `tls`, mutual TLS (cluster/tls.ts);
 * without, plaintext.
 */
export async function listenGrpc(server: grpc.Server, address: string, connectionsMax: number, onRefused: () => void, tls?: TlsCredentials): Promise<GrpcListener> {
  const m = /^\[?([^\]]*)\]?:(\d+)$/.exec(address);
  if (m === null) throw new Error(`expected host:port, got "${address}"`);
  const injector = server.createConnectionInjector(serverCredentials(tls));
  const listener = net.createServer({ noDelay: true }, (socket) => injector.injectConnection(socket));
  capConnections(listener, connectionsMax, onRefused);
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(Number(m[2]), m[1], () => {
      listener.off('error', reject);
      resolve();
    });
  });
  const bound = listener.address();
  return {
    port: typeof bound === 'object' && bound !== null ? bound.port : Number(m[2]),
    close: () => {
      listener.close();
      injector.destroy();
    },
  };
}
