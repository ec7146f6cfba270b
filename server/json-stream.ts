// The stream splitter moved to ovsdb/json-stream.ts, beside the OVSDB client that shares it;
// the server's modules keep importing it from here.
export { JSON_DEPTH_MAX_DEFAULT, JSON_VALUE_BYTES_MAX_DEFAULT, JsonStreamSyntaxError, JsonValueSplitter, JsonValueTooLargeError } from '../ovsdb/json-stream.js';
