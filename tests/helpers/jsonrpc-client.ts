// The OVSDB JSON-RPC 1.0 client tests and benchmarks use: the production connection in
// ovsdb/jsonrpc-client.ts (it started here, as a test-only client), re-exported under the names
// the tests have always imported.
export {
  ConnectionClosedError,
  JsonRpcClient,
  JsonRpcError,
  JsonStreamSyntaxError,
  JsonValueSplitter,
  JsonValueTooLargeError,
  MESSAGE_BYTES_MAX_DEFAULT,
  PENDING_REQUESTS_MAX_DEFAULT,
  REQUEST_TIMEOUT_MS_DEFAULT,
} from '../../ovsdb/jsonrpc-client.js';
export type { Endpoint, JsonRpcClientOptions } from '../../ovsdb/jsonrpc-client.js';
