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
