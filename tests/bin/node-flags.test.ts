// Which of a member's Node and V8 flags the user already gave: the pure helpers `up` and
// `central` use (bin/lib/node-flags.ts). Method: direct calls.
import t from 'tap';
import { flagsNotGiven, nodeFlagName, nodeOptionsFlags } from '../../bin/lib/node-flags.js';
import { memberStartV8Flags } from '../../bin/commands/central.js';

t.test('a flag is named without its value, its --no- or its underscores', async (t) => {
  t.equal(nodeFlagName('--max-semi-space-size=4'), '--max-semi-space-size');
  t.equal(nodeFlagName('--no-allocation-site-pretenuring'), '--allocation-site-pretenuring');
  t.equal(nodeFlagName('--allocation_site_pretenuring'), '--allocation-site-pretenuring');
  t.equal(nodeFlagName('--trace-gc'), '--trace-gc');
});

t.test('flagsNotGiven drops what is given either way and keeps the rest in order', async (t) => {
  const wanted = ['--max-semi-space-size=4', '--no-allocation-site-pretenuring'];
  t.same(flagsNotGiven(wanted, []), wanted);
  t.same(flagsNotGiven(wanted, ['--allocation-site-pretenuring']), ['--max-semi-space-size=4']);
  t.same(flagsNotGiven(wanted, ['--no-allocation-site-pretenuring']), ['--max-semi-space-size=4']);
  t.same(flagsNotGiven(wanted, ['--max-semi-space-size=16', '--trace-gc']), ['--no-allocation-site-pretenuring']);
});

t.test('NODE_OPTIONS gives its flags, not its other words', async (t) => {
  t.same(nodeOptionsFlags({}), []);
  t.same(nodeOptionsFlags({ NODE_OPTIONS: '  --allocation-site-pretenuring   --max-old-space-size=512 ' }), ['--allocation-site-pretenuring', '--max-old-space-size=512']);
  t.same(nodeOptionsFlags({ NODE_OPTIONS: '--require ./x.js' }), ['--require']);
});

t.test('central sets pretenuring off at start unless node was told either way', async (t) => {
  t.same(flagsNotGiven(memberStartV8Flags, []), ['--no-allocation-site-pretenuring']);
  t.same(flagsNotGiven(memberStartV8Flags, nodeOptionsFlags({ NODE_OPTIONS: '--allocation-site-pretenuring' })), []);
});
