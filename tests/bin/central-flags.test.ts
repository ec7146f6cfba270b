// Goal: `ovnts central` sets its V8 tiering flags unless node was given them on its command
// line (node refuses V8 flags such as --interrupt-budget in NODE_OPTIONS).
import t from 'tap';
import { memberTieringFlags, tieringFlagsToSet } from '../../bin/commands/central.js';

t.test('the tiering flags are set unless node was given one of the same name', async (t) => {
  t.same(memberTieringFlags, ['--interrupt-budget=16384']);
  t.same(tieringFlagsToSet([]), ['--interrupt-budget=16384'], 'nothing given: set');
  t.same(tieringFlagsToSet(['--max-semi-space-size=4', '--enable-source-maps']), ['--interrupt-budget=16384'], 'other flags given: set');
  t.same(tieringFlagsToSet(['--interrupt-budget=67584']), [], 'given on the command line: node\'s wins');
});
