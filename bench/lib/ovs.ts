// Whether Open vSwitch's ovsdb-server is installed: benchmarks print "not installed" beside
// their own figures rather than failing when the anchor cannot run.
import { execFileSync } from 'node:child_process';

export function ovsdbServerInstalled(): boolean {
  try {
    execFileSync('ovsdb-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
