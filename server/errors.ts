// The errors the services and their clients share, apart from the modules that raise them: a
// client (ovnts nbctl, the agent) imports these without loading the central node behind them.

/**
 * A central node refused or could not complete a request; the services map `kind` to a status.
 * 'too-large': over a size bound of the log (a retry cannot succeed).
 */
export class CentralNodeError extends Error {
  constructor(
    readonly kind: 'bad-request' | 'too-large' | 'unavailable' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

export type StreamEndKind = 'invalid' | 'unavailable' | 'aborted' | 'exhausted' | 'denied';

/** Why a member ended an agent stream; the service turns the kind into a gRPC status. */
export class StreamEnd extends Error {
  constructor(
    readonly kind: StreamEndKind,
    message: string,
  ) {
    super(message);
  }
}
