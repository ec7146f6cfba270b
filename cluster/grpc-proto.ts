// Loading our .proto files at run time with protobufjs and turning a service into the
// definition @grpc/grpc-js serves and calls: no generated code, no protoc. Decoding is strict
// about shapes (protobufjs rejects malformed bytes) and converts 64-bit integers to numbers
// and bytes to Uint8Array, so handlers see plain values.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

/** How many directories up from this module to look for proto/. */
const protoSearchLevelsMax = 6;

/**
 * Finds proto/<file> by walking up from this module's directory: one level from the source
 * tree (cluster/), two from the compiled tree (dist/cluster/).
 */
export function findProto(file: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level <= protoSearchLevelsMax; level++) {
    const candidate = join(dir, 'proto', file);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`proto/${file} not found in any parent of ${fileURLToPath(import.meta.url)}`);
}

const roots = new Map<string, protobuf.Root>();

export function loadProto(file: string): protobuf.Root {
  let root = roots.get(file);
  if (root === undefined) {
    root = protobuf.loadSync(findProto(file));
    root.resolveAll();
    roots.set(file, root);
  }
  return root;
}

const malformedKey = Symbol('malformed request');

/** A request whose bytes did not decode as its protobuf message. */
export class MalformedRequestError extends Error {}

/** Why a decoded request is malformed, or undefined when it is a proper message. */
export function malformedReason(req: unknown): string | undefined {
  return typeof req === 'object' && req !== null && malformedKey in req ? String((req as Record<symbol, unknown>)[malformedKey]) : undefined;
}

const toObjectOptions: protobuf.IConversionOptions = { longs: Number, enums: String, bytes: Uint8Array as unknown as typeof String, defaults: true, oneofs: true };

function codec(type: protobuf.Type): { serialize: (v: unknown) => Buffer; deserialize: (b: Buffer) => unknown } {
  return {
    serialize: (v) => {
      // fromObject accepts enum names and numbers alike; verify then checks the result.
      const message = type.fromObject(v as Record<string, unknown>);
      const err = type.verify(message);
      if (err !== null) throw new Error(`${type.name}: ${err}`);
      return Buffer.from(type.encode(message).finish());
    },
    deserialize: (b) => {
      // Bytes that are not this message must not become an INTERNAL error deep in grpc-js:
      // they decode to a marker the handler answers with INVALID_ARGUMENT.
      try {
        return type.toObject(type.decode(b), toObjectOptions);
      } catch (err) {
        return { [malformedKey]: `${type.name}: ${(err as Error).message}` };
      }
    },
  };
}

/**
 * The grpc-js definition of `serviceName` (e.g. 'ovnts.raftkv.RaftKv'), method keys in
 * lowerCamelCase as grpc-js clients expect them.
 */
export function serviceDefinition(root: protobuf.Root, serviceName: string): grpc.ServiceDefinition {
  const service = root.lookupService(serviceName);
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of Object.values(service.methods)) {
    const req = codec(root.lookupType(method.requestType));
    const res = codec(root.lookupType(method.responseType));
    const key = method.name.charAt(0).toLowerCase() + method.name.slice(1);
    def[key] = {
      path: `/${serviceName}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: req.serialize,
      requestDeserialize: req.deserialize,
      responseSerialize: res.serialize,
      responseDeserialize: res.deserialize,
    };
  }
  return def as grpc.ServiceDefinition;
}
