// Where the repository and the tests' data are, whether a test runs compiled (dist/tests/, as
// `npm test` runs them: through tsx each file paid about half a second more to start) or from
// source through tsx (`npm run test:one -- tests/…`). Data files stay in tests/ only.
import { join } from 'node:path';

/** The repository: two folders up from here, or three when this runs compiled (dist/tests/helpers). */
export const repoRoot = join(import.meta.dirname, import.meta.filename.endsWith('.js') ? '../../..' : '../..');

/** The tests' source folder, which holds testdata/ and fixtures/. */
export const testsDir = join(repoRoot, 'tests');
