// Node and V8 flags a member runs with, and which of them the user already gave.

/** A flag's name for comparing: `--no-x` and `--x=1` both name `--x`; `_` is V8's `-`. */
export function nodeFlagName(flag: string): string {
  return (flag.split('=')[0] as string).replace(/_/g, '-').replace(/^--no-/, '--');
}

/** The flags in `NODE_OPTIONS` (node reads them as if given first on its command line). */
export function nodeOptionsFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.NODE_OPTIONS ?? '').split(/\s+/).filter((f) => f.startsWith('--'));
}

/** `wanted` less the flags `given` already names, either way. */
export function flagsNotGiven(wanted: readonly string[], given: readonly string[]): string[] {
  const names = new Set(given.map(nodeFlagName));
  return wanted.filter((f) => !names.has(nodeFlagName(f)));
}
