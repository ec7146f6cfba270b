// A test folder that outlives the test's teardowns. tap removes a t.testdir() folder when the
// test ends, and runs the teardowns registered after that call only afterwards: a node or
// process a teardown stops would still be writing there while the folder is removed
// (ENOTEMPTY, then a teardown that hangs on a folder gone). Registering a teardown before the
// folder is made puts the folder's removal after every teardown of the test, whenever added.
import type { Test } from 'tap';

type Content = Parameters<Test['testdir']>[0];

export function testdirAfterTeardowns(t: { testdir(content?: Content): string; teardown(fn: () => unknown): void }, content?: Content): string {
  t.teardown(() => undefined);
  return t.testdir(content);
}
