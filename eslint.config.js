// Lint: ESLint's and typescript-eslint's recommended rules (syntax only: no type
// information, so a run takes seconds), run in CI by `npm run lint`.
// Why each departure from the defaults is here is said beside it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/**', 'dist/**', 'imports/**', 'node_modules/**', 'test/cluster/kwok/**', 'docs/**', 'api-docs/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // The length the code already keeps; long template strings (messages) and patterns may run over.
      'max-len': ['error', { code: 200, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
      // Unused names are compile errors already (noUnusedLocals/Parameters); `_name` marks one kept on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Kubernetes objects are open-ended JSON: outside the controller's own code, tests and
      // generators read them as `any` (the server, not the type, is the truth there).
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // The controller and its machinery: every `any` says why, in an eslint-disable comment.
    files: ['reconciler/**/*.ts', 'kube/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
