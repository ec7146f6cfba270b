// OVSDB errors as RFC 7047 (and ovsdb-server) name them. An OvsdbError is an expected outcome
// (bad input, constraint violation), never a programmer error: programmer errors are asserts.

/** The closed set of error names that our engine produces, spelled as RFC 7047 spells them. */
export const OvsdbErrorName = {
  syntaxError: 'syntax error',
  unknownDatabase: 'unknown database',
  unknownTable: 'unknown table',
  unknownColumn: 'unknown column',
  constraintViolation: 'constraint violation',
  referentialIntegrityViolation: 'referential integrity violation',
  resourcesExhausted: 'resources exhausted',
  domainError: 'domain error',
  rangeError: 'range error',
  notSupported: 'not supported',
  timedOut: 'timed out',
  aborted: 'aborted',
  notOwner: 'not owner',
  permissionError: 'permission error',
  unknownMethod: 'unknown method',
  ioError: 'I/O error',
  notAllowed: 'not allowed',
  duplicateUuidName: 'duplicate uuid-name',
  duplicateUuid: 'duplicate uuid',
  unknownOperation: 'unknown operation',
  unknownFunction: 'unknown function',
  unknownMutator: 'unknown mutator',
  /** ovsdb-server's generic name, used e.g. for a map with a duplicate key. */
  ovsdbError: 'ovsdb error',
} as const;

export type OvsdbErrorNameValue = (typeof OvsdbErrorName)[keyof typeof OvsdbErrorName];

/** The wire form of an error, as it appears in a transact result array. */
export interface OvsdbErrorJson {
  readonly error: string;
  readonly details?: string;
}

export class OvsdbError extends Error {
  readonly error: OvsdbErrorNameValue;
  readonly details: string;

  constructor(error: OvsdbErrorNameValue, details: string) {
    super(`${error}: ${details}`);
    this.name = 'OvsdbError';
    this.error = error;
    this.details = details;
  }

  toJson(): OvsdbErrorJson {
    return { error: this.error, details: this.details };
  }
}

export function syntaxError(details: string): OvsdbError {
  return new OvsdbError(OvsdbErrorName.syntaxError, details);
}

export function constraintViolation(details: string): OvsdbError {
  return new OvsdbError(OvsdbErrorName.constraintViolation, details);
}

/** Longest excerpt of a client's value quoted back in an error message. */
export const quotedValueCharsMax = 120;
/** Deepest nesting of a client's value quoted back in an error message. */
const quotedValueDepthMax = 4;

/**
 * A short, bounded rendering of a client-supplied JSON value for an error message: never
 * deeper than a few levels and never longer than quotedValueCharsMax, so a huge or deeply
 * nested value cannot blow the stack or bloat the reply that reports it.
 */
export function quote(v: unknown): string {
  const out: string[] = [];
  let length = 0;
  const push = (s: string): boolean => {
    out.push(s);
    length += s.length;
    return length <= quotedValueCharsMax;
  };
  const walk = (x: unknown, depth: number): boolean => {
    if (Array.isArray(x)) {
      if (depth >= quotedValueDepthMax) return push('[...]');
      if (!push('[')) return false;
      for (let i = 0; i < x.length; i++) {
        if (i > 0 && !push(',')) return false;
        if (!walk(x[i], depth + 1)) return false;
      }
      return push(']');
    }
    if (typeof x === 'object' && x !== null) {
      if (depth >= quotedValueDepthMax) return push('{...}');
      if (!push('{')) return false;
      let first = true;
      for (const [k, val] of Object.entries(x)) {
        if (!first && !push(',')) return false;
        first = false;
        if (!push(`${JSON.stringify(k.slice(0, quotedValueCharsMax))}:`)) return false;
        if (!walk(val, depth + 1)) return false;
      }
      return push('}');
    }
    if (typeof x === 'string') return push(JSON.stringify(x.slice(0, quotedValueCharsMax)));
    return push(String(x));
  };
  walk(v, 0);
  const text = out.join('');
  return text.length > quotedValueCharsMax ? `${text.slice(0, quotedValueCharsMax)}...` : text;
}
