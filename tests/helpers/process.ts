// Tests and benchmarks use the same pid helpers as `ovnts up`/`down`.
export { isAlive, processArgv, processState, stopPid, waitForExit } from '../../bin/lib/pids.js';
